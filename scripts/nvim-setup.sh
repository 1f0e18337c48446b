#!/usr/bin/env bash
# Debian's Neovim, for the headless Neovim test of contrib/nvim/ralph.lua (tests/nvim/).
# Installed only when missing, the way the e2e installs its Debian packages.
source "$(dirname "${BASH_SOURCE[0]}")/../editor-client/scripts/lib.sh"
ensure_apt_packages neovim
