/**
 * ISO 8601 durations, two ways: fixed lengths (weeks, days and smaller; metric windows, retention settings) and
 * calendar arithmetic (years and months allowed; token expiry from a TTL).
 */
import { badRequest } from './errors.js';

const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

const SHORT_UNITS: Record<string, number> = { s: SECOND, m: MINUTE, h: HOUR, d: DAY, w: 7 * DAY };
const SHORT_FORM = /^(\d{1,6})([smhdw])$/i;
// ISO 8601 durations without years and months (their length depends on the calendar)
const ISO_FORM = /^P(?:(\d{1,6})W)?(?:(\d{1,6})D)?(?:T(?:(\d{1,6})H)?(?:(\d{1,6})M)?(?:(\d{1,6})S)?)?$/i;

/** Milliseconds of an ISO 8601 duration (PT15M, PT1H, P1D, P1DT12H, P1W) or a short form (15m, 1h, 1d, 7d); undefined if neither. */
export function durationMs(text: string): number | undefined {
  const short = SHORT_FORM.exec(text);
  if (short) return Number(short[1]) * SHORT_UNITS[short[2].toLowerCase()];
  const iso = ISO_FORM.exec(text);
  if (!iso || /T$/i.test(text) || text.length < 3) return undefined;
  const [, w, d, h, m, s] = iso.map((part) => Number(part ?? 0));
  return w * 7 * DAY + d * DAY + h * HOUR + m * MINUTE + s * SECOND;
}

/** The canonical ISO 8601 form of a duration, e.g. 900000 -> PT15M, 86400000 -> P1D, 90000000 -> P1DT1H. */
export function isoDuration(ms: number): string {
  const days = Math.floor(ms / DAY);
  let rest = ms - days * DAY;
  const hours = Math.floor(rest / HOUR);
  rest -= hours * HOUR;
  const minutes = Math.floor(rest / MINUTE);
  const seconds = Math.round((rest - minutes * MINUTE) / SECOND);
  const time = `${hours ? `${hours}H` : ''}${minutes ? `${minutes}M` : ''}${seconds ? `${seconds}S` : ''}`;
  if (!days && !time) return 'PT0S';
  return `P${days ? `${days}D` : ''}${time ? `T${time}` : ''}`;
}

/** A duration query parameter, or a 400 that names it. */
export function parseDurationParam(name: string, value: string): number {
  const ms = durationMs(value);
  if (ms === undefined || ms <= 0) {
    throw badRequest(
      `value for query parameter '${name}' must be an ISO 8601 duration such as PT15M, PT1H or P1D (or a short form such as 15m, 1h, 1d); got '${value}'`,
    );
  }
  return ms;
}

export const DURATION = { SECOND, MINUTE, HOUR, DAY };

/** With years and months, whose length depends on the date they are added to. */
const CALENDAR_DURATION = /^P(?:(\d+)Y)?(?:(\d+)M)?(?:(\d+)W)?(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d+)?)S)?)?$/;

/** `from` plus an ISO 8601 duration (e.g. P7D, PT12H, P1M), or undefined when the text is not one. */
export function addIsoDuration(from: Date, text: string): Date | undefined {
  const m = CALENDAR_DURATION.exec(text);
  if (!m || text === 'P' || text.endsWith('T')) return undefined;
  const [years, months, weeks, days, hours, minutes, seconds] = m.slice(1).map((v) => (v === undefined ? 0 : Number(v)));
  const d = new Date(from);
  d.setUTCFullYear(d.getUTCFullYear() + years, d.getUTCMonth() + months, d.getUTCDate() + weeks * 7 + days);
  return new Date(d.getTime() + ((hours * 60 + minutes) * 60 + seconds) * 1000);
}
