/**
 * RFC 9110 7.6.1 connection-specific header fields, plus the de-facto ones: the edge never forwards them in either
 * direction, and a share's traffic policy may neither set nor remove them.
 */
export const HOP_BY_HOP: ReadonlySet<string> = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'proxy-authenticate',
  'proxy-authorization',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'http2-settings',
]);
