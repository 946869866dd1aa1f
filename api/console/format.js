// Small formatting helpers shared by the views.
/** A moment of the API (ISO 8601) in the reader's words, or a dash. @param {string | null | undefined} iso */
export const when = (iso) => (iso ? new Date(iso).toLocaleString() : '—');

/** @param {number | null | undefined} n */
export function bytes(n) {
  if (!n) return '0 B';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  const i = Math.min(units.length - 1, Math.floor(Math.log(n) / Math.log(1024)));
  return `${(n / 1024 ** i).toFixed(i ? 1 : 0)} ${units[i]}`;
}

/** A status as a badge class: good, bad, busy or plain. @param {string} status */
export function tone(status) {
  if (['ACTIVE', 'DEPLOYED', 'SUCCEEDED', 'UP', 'PASS', 'online', 'VALID'].includes(status)) return 'good';
  if (['ERROR', 'FAILED', 'DOWN', 'FAIL', 'offline', 'DELETED'].includes(status)) return 'bad';
  if (['NEW', 'PENDING', 'PROVISIONING', 'QUEUED', 'RUNNING', 'DELETING'].includes(status)) return 'busy';
  return 'plain';
}

/** The line that installs the agent package (bin `edgehub`) from the service that made `url` (an enrollment URL). */
export const installLine = (/** @type {string} */ url) => `npm install -g ${new URL(url).origin}/downloads/edgehub-agent.tgz`;
