// The console's only way to the service: the public and operator APIs, with the credential of this tab.
const KEY = 'edgehub.credential';

export const credential = {
  get: () => sessionStorage.getItem(KEY),
  set: (/** @type {string} */ value) => sessionStorage.setItem(KEY, value),
  forget: () => sessionStorage.removeItem(KEY),
};

/** An API error in words: the status, the error code and the service's message. */
export class ApiError extends Error {
  /**
   * @param {number} status the HTTP status (0: the service was not reached)
   * @param {string | undefined} code the service's error code
   * @param {string} message
   */
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
  get words() {
    return `${this.message} (${this.status}${this.code ? ` ${this.code}` : ''})`;
  }
}

/**
 * A value of the API's JSON, as the service sends it (its shapes are described by the OpenAPI document, not here).
 * @typedef {any} Json
 */

/** What a view holds as its error: an ApiError, or an Error of its own words. @typedef {ApiError | Error | undefined} ViewError */

/**
 * JSON in and out; a 4xx/5xx becomes an ApiError carrying the service's own message.
 * @param {string} path
 * @param {{ method?: string, body?: unknown, token?: string | null }} [options]
 * @returns {Promise<Json>}
 */
export async function api(path, { method = 'GET', body, token = credential.get() } = {}) {
  let res;
  try {
    res = await fetch(path, {
      method,
      headers: { accept: 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}), ...(body ? { 'content-type': 'application/json' } : {}) },
      body: body ? JSON.stringify(body) : undefined,
    });
  } catch (err) {
    throw new ApiError(0, 'network', `the service could not be reached: ${/** @type {Error} */ (err).message}`);
  }
  const text = await res.text();
  let json;
  try {
    json = text ? JSON.parse(text) : undefined;
  } catch {
    json = undefined;
  }
  if (!res.ok) throw new ApiError(res.status, json?.error, json?.message ?? (text || res.statusText));
  return json;
}

/**
 * A text resource (such as the Prometheus metrics) with the tab's credential; a refusal becomes an ApiError.
 * @param {string} path
 * @param {{ token?: string | null }} [options]
 * @returns {Promise<string>}
 */
export async function apiText(path, { token = credential.get() } = {}) {
  let res;
  try {
    res = await fetch(path, { headers: { accept: 'text/plain', ...(token ? { authorization: `Bearer ${token}` } : {}) } });
  } catch (err) {
    throw new ApiError(0, 'network', `the service could not be reached: ${/** @type {Error} */ (err).message}`);
  }
  const text = await res.text();
  if (!res.ok) {
    let json;
    try {
      json = JSON.parse(text);
    } catch {
      json = undefined;
    }
    throw new ApiError(res.status, json?.error, json?.message ?? (text || res.statusText));
  }
  return text;
}

/** @typedef {{ role: 'hub', hubId: string, name: string } | { role: 'operator' }} Who */

/** @param {string} token @returns {Promise<Who>} */
const asHub = async (token) => {
  const account = await api('/account', { token });
  return { role: 'hub', hubId: account.hubId, name: account.name };
};
/** @param {string} token @returns {Promise<Who>} */
const asOperator = async (token) => {
  await api('/admin/v1/hubs?size=1', { token });
  return { role: 'operator' };
};

/**
 * Who a credential is: a hub (an API key, `ehk_...`, asked first) or the operator (the admin token), or an ApiError
 * saying why neither. The likely one is asked first so that a good credential costs no refused request.
 * @param {string} token
 * @returns {Promise<Who>}
 */
export async function whoIs(token) {
  const [first, second] = token.startsWith('ehk_') ? [asHub, asOperator] : [asOperator, asHub];
  try {
    return await first(token);
  } catch (err) {
    if (!(err instanceof ApiError) || (err.status !== 401 && err.status !== 403)) throw err;
  }
  return second(token);
}
