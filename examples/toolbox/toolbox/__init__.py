"""Small text helpers; each active OpenSpec change adds one."""

__version__ = "0.0.1"
