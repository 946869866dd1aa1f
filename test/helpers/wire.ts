/**
 * Reading HTTP/1.1 messages off raw bytes in tests, so that a test can see exactly what crossed a proxy: requests
 * (as a target receives them) and responses (as a client receives them). Strict where framing is concerned: a
 * message that is not clearly framed ends the parse with `error` rather than being guessed at.
 */

export interface WireMessage {
  /** Request: method and target; response: status. */
  method?: string;
  target?: string;
  status?: number;
  headers: [string, string][];
  body: string;
  trailers: [string, string][];
  complete: boolean;
}

export interface WireParse {
  messages: WireMessage[];
  /** Bytes after the last complete message. */
  rest: string;
  error?: string;
}

const header = (m: WireMessage, name: string) => m.headers.filter(([n]) => n.toLowerCase() === name).map(([, v]) => v);

function parseChunked(text: string, at: number): { body: string; trailers: [string, string][]; end: number } | 'incomplete' | string {
  let body = '';
  let i = at;
  for (;;) {
    const eol = text.indexOf('\r\n', i);
    if (eol < 0) return 'incomplete';
    const sizeText = text.slice(i, eol).split(';')[0].trim();
    if (!/^[0-9a-fA-F]+$/.test(sizeText)) return `bad chunk size ${JSON.stringify(sizeText)}`;
    const size = parseInt(sizeText, 16);
    i = eol + 2;
    if (size === 0) {
      const trailers: [string, string][] = [];
      for (;;) {
        const e = text.indexOf('\r\n', i);
        if (e < 0) return 'incomplete';
        const line = text.slice(i, e);
        i = e + 2;
        if (line === '') return { body, trailers, end: i };
        const colon = line.indexOf(':');
        trailers.push([line.slice(0, colon), line.slice(colon + 1).trim()]);
      }
    }
    if (text.length < i + size + 2) return 'incomplete';
    body += text.slice(i, i + size);
    if (text.slice(i + size, i + size + 2) !== '\r\n') return 'chunk not followed by CRLF';
    i += size + 2;
  }
}

/**
 * Messages in `text` (latin1). `kind` says which: requests, or responses to requests of `methods` (in order; HEAD
 * answers carry no body). `closed`: the connection ended after `text`, which completes a close-delimited body.
 */
export function parseMessages(text: string, kind: 'request' | 'response', methods: string[] = [], closed = false): WireParse {
  const messages: WireMessage[] = [];
  let at = 0;
  for (;;) {
    if (at >= text.length) return { messages, rest: '' };
    const end = text.indexOf('\r\n\r\n', at);
    if (end < 0) return { messages, rest: text.slice(at) };
    const lines = text.slice(at, end).split('\r\n');
    const start = lines[0].split(' ');
    const m: WireMessage = { headers: [], body: '', trailers: [], complete: false };
    if (kind === 'request') {
      if (start.length !== 3 || !/^HTTP\/1\.[01]$/.test(start[2]))
        return { messages, rest: text.slice(at), error: `bad request line ${JSON.stringify(lines[0])}` };
      m.method = start[0];
      m.target = start[1];
    } else {
      if (!/^HTTP\/1\.[01] \d{3}/.test(lines[0])) return { messages, rest: text.slice(at), error: `bad status line ${JSON.stringify(lines[0].slice(0, 40))}` };
      m.status = Number(start[1]);
    }
    for (const line of lines.slice(1)) {
      const colon = line.indexOf(':');
      if (colon <= 0) return { messages, rest: text.slice(at), error: `bad header line ${JSON.stringify(line)}` };
      m.headers.push([line.slice(0, colon), line.slice(colon + 1).trim()]);
    }
    let i = end + 4;
    if (kind === 'response' && m.status! >= 100 && m.status! < 200 && m.status !== 101) {
      at = i; // informational: the final answer to the same request follows
      continue;
    }
    const te = header(m, 'transfer-encoding');
    const cl = header(m, 'content-length');
    const noBody = kind === 'response' && (methods[messages.length] === 'HEAD' || m.status === 204 || m.status === 304);
    if (noBody) {
      // no body, whatever the headers say
    } else if (te.length) {
      if (te.join(',').trim().toLowerCase() !== 'chunked') return { messages, rest: text.slice(at), error: `transfer-encoding ${te.join(',')}` };
      if (cl.length) return { messages, rest: text.slice(at), error: 'both Content-Length and Transfer-Encoding' };
      const chunked = parseChunked(text, i);
      if (chunked === 'incomplete') return { messages, rest: text.slice(at) };
      if (typeof chunked === 'string') return { messages, rest: text.slice(at), error: chunked };
      m.body = chunked.body;
      m.trailers = chunked.trailers;
      i = chunked.end;
    } else if (cl.length) {
      if (new Set(cl).size !== 1 || !/^\d+$/.test(cl[0])) return { messages, rest: text.slice(at), error: `content-length ${cl.join(',')}` };
      const n = Number(cl[0]);
      if (text.length < i + n) {
        messages.push({ ...m, body: text.slice(i) });
        return { messages, rest: '' };
      }
      m.body = text.slice(i, i + n);
      i += n;
    } else if (kind === 'response') {
      m.body = text.slice(i);
      m.complete = closed;
      messages.push(m);
      return { messages, rest: '' };
    }
    m.complete = true;
    messages.push(m);
    at = i;
  }
}
