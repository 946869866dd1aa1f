const ISO_DURATION = /^P(?:(\d+)Y)?(?:(\d+)M)?(?:(\d+)W)?(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d+)?)S)?)?$/;

/** `from` plus an ISO 8601 duration (e.g. P7D, PT12H, P1M), or undefined when the text is not one. */
export function addIsoDuration(from: Date, text: string): Date | undefined {
  const m = ISO_DURATION.exec(text);
  if (!m || text === 'P' || text.endsWith('T')) return undefined;
  const [years, months, weeks, days, hours, minutes, seconds] = m.slice(1).map((v) => (v === undefined ? 0 : Number(v)));
  const d = new Date(from);
  d.setUTCFullYear(d.getUTCFullYear() + years, d.getUTCMonth() + months, d.getUTCDate() + weeks * 7 + days);
  return new Date(d.getTime() + ((hours * 60 + minutes) * 60 + seconds) * 1000);
}
