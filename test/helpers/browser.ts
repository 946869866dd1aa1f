/**
 * A scripted browser for login tests: a cookie jar per host (host-only cookies, as browsers keep them; ports are not
 * told apart, as in browsers), redirects followed by hand, HTML forms submitted by their action. `*.localhost` names
 * go to 127.0.0.1 (browsers do that; node's resolver does not). Plain HTTP and HTTPS (server not verified).
 */
import http from 'node:http';
import https from 'node:https';

export interface Page {
  url: URL;
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
  json: any;
  setCookies: string[];
}

export interface RequestOptions {
  method?: string;
  body?: string;
  headers?: Record<string, string>;
  /** Accept header; a browser's by default. */
  accept?: string;
  /** Send no cookies from the jar. */
  noCookies?: boolean;
}

export interface StoredCookie {
  value: string;
  attributes: string;
}

export class Browser {
  /** hostname -> cookie name -> cookie */
  readonly jar = new Map<string, Map<string, StoredCookie>>();

  cookies(host: string): Map<string, StoredCookie> {
    let cookies = this.jar.get(host.toLowerCase());
    if (!cookies) this.jar.set(host.toLowerCase(), (cookies = new Map()));
    return cookies;
  }

  cookieHeader(url: URL): string | undefined {
    const cookies = [...this.cookies(url.hostname)].filter(([, c]) => url.protocol === 'https:' || !/;\s*secure/i.test(c.attributes));
    return cookies.length ? cookies.map(([n, c]) => `${n}=${c.value}`).join('; ') : undefined;
  }

  request(target: string | URL, options: RequestOptions = {}): Promise<Page> {
    const url = new URL(target);
    const headers: Record<string, string> = { host: url.host, accept: options.accept ?? 'text/html,application/xhtml+xml,*/*;q=0.8', ...options.headers };
    const cookie = options.noCookies ? undefined : this.cookieHeader(url);
    if (cookie && !headers.cookie) headers.cookie = cookie;
    if (options.body !== undefined) headers['content-length'] = String(Buffer.byteLength(options.body));
    const loopback = /(^|\.)localhost$/i.test(url.hostname);
    const secure = url.protocol === 'https:';
    return new Promise((resolve, reject) => {
      const req = (secure ? https : http).request(
        {
          host: loopback ? '127.0.0.1' : url.hostname,
          port: url.port || (secure ? 443 : 80),
          path: url.pathname + url.search,
          method: options.method ?? 'GET',
          headers,
          agent: false,
          ...(secure ? { servername: url.hostname, rejectUnauthorized: false } : {}),
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => {
            const body = Buffer.concat(chunks).toString('utf8');
            const setCookies = ([] as string[]).concat(res.headers['set-cookie'] ?? []);
            for (const line of setCookies) this.store(url, line);
            let json: any;
            try {
              json = JSON.parse(body);
            } catch {
              json = undefined;
            }
            resolve({ url, status: res.statusCode ?? 0, headers: res.headers, body, json, setCookies });
          });
          res.on('error', reject);
        },
      );
      req.on('error', reject);
      req.end(options.body);
    });
  }

  private store(url: URL, line: string): void {
    const [pair, ...attrs] = line.split(';');
    const eq = pair.indexOf('=');
    const name = pair.slice(0, eq).trim();
    const value = pair.slice(eq + 1).trim();
    const attributes = attrs.join(';');
    if (/;\s*secure/i.test(';' + attributes) && url.protocol !== 'https:') return; // browsers drop Secure cookies from http
    const maxAge = /max-age=(-?\d+)/i.exec(attributes)?.[1];
    if (maxAge !== undefined && Number(maxAge) <= 0) this.cookies(url.hostname).delete(name);
    else this.cookies(url.hostname).set(name, { value, attributes: ';' + attributes });
  }

  /** Follows redirects (GET) until a non-redirect answer, or until `stopAt` says to stop before fetching a URL. */
  async navigate(
    target: string | URL,
    options: RequestOptions & { stopAt?: (url: URL) => boolean; maxRedirects?: number } = {},
  ): Promise<{ page?: Page; stoppedAt?: URL; chain: URL[] }> {
    let url = new URL(target);
    const chain: URL[] = [];
    let request: RequestOptions = options;
    for (let i = 0; i < (options.maxRedirects ?? 20); i++) {
      if (options.stopAt?.(url)) return { stoppedAt: url, chain };
      chain.push(url);
      const page = await this.request(url, request);
      if (page.status < 300 || page.status >= 400 || !page.headers.location) return { page, chain };
      url = new URL(page.headers.location, url);
      request = { accept: options.accept, headers: options.headers };
    }
    throw new Error(`too many redirects: ${chain.map(String).join(' -> ')}`);
  }

  /** Submits the first form of `page` (hidden inputs plus `fields`) and follows the redirects. */
  async submit(page: Page, fields: Record<string, string>, options: { stopAt?: (url: URL) => boolean } = {}) {
    const form = /<form[^>]*action="([^"]+)"[^>]*>([\s\S]*?)<\/form>/i.exec(page.body);
    if (!form) throw new Error(`no form on ${page.url}: ${page.body.slice(0, 300)}`);
    const values: Record<string, string> = {};
    for (const input of form[2].matchAll(/<input[^>]*>/gi)) {
      const name = /name="([^"]+)"/.exec(input[0])?.[1];
      const value = /value="([^"]*)"/.exec(input[0])?.[1];
      if (name && /type="hidden"/.test(input[0])) values[name] = decodeEntities(value ?? '');
    }
    Object.assign(values, fields);
    const action = new URL(decodeEntities(form[1]), page.url);
    const posted = await this.request(action, {
      method: 'POST',
      body: new URLSearchParams(values).toString(),
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    if (posted.status >= 300 && posted.status < 400 && posted.headers.location) {
      const next = await this.navigate(new URL(posted.headers.location, action), options);
      return { ...next, chain: [action, ...next.chain] };
    }
    return { page: posted, chain: [action] };
  }
}

const decodeEntities = (s: string) =>
  s
    .replace(/&#(\d+);/g, (_, d) => String.fromCharCode(Number(d)))
    .replace(/&#x([0-9a-f]+);/gi, (_, h) => String.fromCharCode(parseInt(h, 16)))
    .replace(/&amp;/g, '&')
    .replace(/&quot;/g, '"')
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>');
