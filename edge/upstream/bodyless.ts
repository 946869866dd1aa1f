/**
 * Answers whose end the edge decides itself, whatever the target's bytes say (RFC 9112 6.3): 204, 304 and any answer
 * to HEAD end with their head. A target that sends a body after such a head anyway gets its connection retired by
 * undici (the bytes are nobody's answer); the client's connection carries on. And a chunked body is whole once its
 * last chunk came: a trailer section undici refuses (a Content-Length in it, a malformed field) costs the target its
 * connection, not the client the end of a body it already has.
 */
export const isBodyless = (status: number, method: string | undefined) => status === 204 || status === 304 || method === 'HEAD';

/** A 204 carries no Content-Length (RFC 9110 8.6); the target's is dropped. */
export function withoutLength(lines: string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < lines.length; i += 2) if (lines[i].toLowerCase() !== 'content-length') out.push(lines[i], lines[i + 1]);
  return out;
}

/**
 * Parse errors llhttp can only raise in a header section: once the answer's head was accepted (so during its body),
 * they come from the trailer section, after the last chunk.
 */
const HEADER_SECTION_ERRORS =
  /Content-Length can't be present with Transfer-Encoding|Transfer-Encoding can't be present with Content-Length|Invalid header (?:field|value) char|Header overflow|Duplicate Content-Length|Invalid character in Content-Length|Missing expected (?:CR|LF) after header value|Unexpected whitespace after header value/;

export const inTrailers = (err: Error): boolean => err.name === 'HTTPParserError' && HEADER_SECTION_ERRORS.test(err.message);
