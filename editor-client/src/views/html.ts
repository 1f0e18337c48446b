// What the extension's HTML pages (the history page, its queue tables, the review page) share:
// escaping, and how they write times, durations, money and the values read from a record. Pure.
import { usd } from "../money";

export function escapeHtml(text: string | number | null | undefined): string {
  return String(text ?? "").replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c] as string);
}

/** A local date and time, e.g. "24 Nov 2026, 07:01:02" in the reader's own format. */
export function localTime(iso: string | null | undefined, locale?: string): string {
  if (!iso) {
    return "—";
  }
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? iso : d.toLocaleString(locale, { dateStyle: "medium", timeStyle: "medium" });
}

export function durationOf(start: string | null | undefined, end: string | null | undefined): string {
  if (!start || !end) {
    return "—";
  }
  const ms = new Date(end).getTime() - new Date(start).getTime();
  if (!Number.isFinite(ms) || ms < 0) {
    return "—";
  }
  if (ms < 10_000) {
    return `${(ms / 1000).toFixed(1)} s`;
  }
  const s = Math.round(ms / 1000);
  return s < 60 ? `${s} s` : s < 3600 ? `${Math.floor(s / 60)} min ${s % 60} s` : `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
}

export function money(cost: number | null | undefined): string {
  return typeof cost === "number" ? usd(cost, cost < 1 ? 4 : 2) : "—";
}

/** A finite number, or null: a record is a file of the workspace and may hold anything. */
export function num(v: unknown): number | null {
  return typeof v === "number" && Number.isFinite(v) ? v : null;
}

export function text(v: unknown): string | null {
  return typeof v === "string" ? v : null;
}

/** Seconds as the page says a duration ("40 s", "2 min 5 s"). */
export function seconds(s: number | null | undefined): string {
  const v = num(s);
  return v === null || v < 0 ? "—" : durationOf(new Date(0).toISOString(), new Date(v * 1000).toISOString());
}
