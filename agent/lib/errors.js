/** A refusal or failure of the command line: one line for the user. */
export class EnrollError extends Error {}

/**
 * An error as one line (its cause's code or message appended).
 * @param {unknown} err
 * @returns {string}
 */
export const oneLine = (err) => {
  const e = /** @type {Error & { cause?: Error & { code?: string } }} */ (err);
  const detail = e?.cause ? `${e.message} (${e.cause.code ?? e.cause.message})` : (e?.message ?? String(err));
  return detail.replace(/\s+/g, ' ').trim();
};
