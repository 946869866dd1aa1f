import test from 'ava';
import { addIsoDuration, DURATION, durationMs, isoDuration, parseDurationParam } from '../../shared/durations.js';

const { SECOND, MINUTE, HOUR, DAY } = DURATION;

test('durationMs: ISO 8601 without years and months, and the short forms', (t) => {
  t.is(durationMs('PT15M'), 15 * MINUTE);
  t.is(durationMs('PT1H'), HOUR);
  t.is(durationMs('P1D'), DAY);
  t.is(durationMs('P1DT12H'), DAY + 12 * HOUR);
  t.is(durationMs('P1W'), 7 * DAY);
  t.is(durationMs('pt30s'), 30 * SECOND);
  t.is(durationMs('15m'), 15 * MINUTE);
  t.is(durationMs('7d'), 7 * DAY);
  t.is(durationMs('2W'), 14 * DAY);
  for (const bad of ['P', 'PT', 'P1DT', 'P1Y', 'P1M', 'PT1.5H', '1', '1y', '-PT1H', 'PT-1H', 'P1234567D', '', ' PT1H']) t.is(durationMs(bad), undefined, bad);
});

test('isoDuration: the canonical form, and back', (t) => {
  t.is(isoDuration(0), 'PT0S');
  t.is(isoDuration(15 * MINUTE), 'PT15M');
  t.is(isoDuration(DAY), 'P1D');
  t.is(isoDuration(DAY + HOUR), 'P1DT1H');
  t.is(isoDuration(HOUR + MINUTE + SECOND), 'PT1H1M1S');
  for (const ms of [SECOND, 59 * MINUTE, 3 * DAY + 4 * HOUR + 5 * MINUTE + 6 * SECOND]) t.is(durationMs(isoDuration(ms)), ms);
});

test('parseDurationParam: a 400 that names the parameter and the value', (t) => {
  t.is(parseDurationParam('range', 'PT1H'), HOUR);
  const err = t.throws(() => parseDurationParam('range', 'soon')) as Error & { code?: string };
  t.is(err.code, 'EH_INVALID_REQUEST');
  t.regex(err.message, /'range'.*'soon'/);
  t.throws(() => parseDurationParam('step', 'PT0S'), { message: /'step'/ });
});

test('addIsoDuration: calendar arithmetic with years and months', (t) => {
  const from = new Date('2024-01-31T10:00:00Z');
  t.is(addIsoDuration(from, 'P7D')?.toISOString(), '2024-02-07T10:00:00.000Z');
  t.is(addIsoDuration(from, 'PT12H')?.toISOString(), '2024-01-31T22:00:00.000Z');
  t.is(addIsoDuration(new Date('2024-02-29T00:00:00Z'), 'P1Y')?.toISOString(), '2025-03-01T00:00:00.000Z');
  t.is(addIsoDuration(from, 'P1Y2M3DT4H5M6.5S')?.toISOString(), '2025-04-03T14:05:06.500Z');
  for (const bad of ['P', 'PT', 'P1DT', '7d', 'P-1D', '']) t.is(addIsoDuration(from, bad), undefined, bad);
});
