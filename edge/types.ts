/** What the edge keeps in memory for each routed share, and the change events it acts on (see edge/routes.ts). */

export interface LoginProvider {
  id: string;
  type: 'OIDC' | 'GOOGLE' | 'GITHUB';
  clientId: string;
  /** Decrypted in the edge only, never logged. */
  clientSecret: string;
  issuerUrl: string | null;
  scopes: string[];
  /** e.g. ["*@example.com", "bob@example.org"] */
  emailPatterns: string[];
}

export interface ShareRoute {
  zId: string;
  hubId: string;
  envZId: string;
  frontendId: string;
  target: URL;
  mutualTls: boolean;
  /** The share's auth provider (login required), or null. */
  auth: LoginProvider | null;
  /** The share's own oauthEmailDomains when set: a login must match these too. */
  emailDomains: string[] | null;
  /** oauthAuthorizationCheckInterval in ms (default PT3H). */
  checkIntervalMs: number;
}

/** A NOTIFY on channel edgehub_edge (migration 0500): which row of which table changed. */
export interface EdgeChange {
  table: string;
  op: 'INSERT' | 'UPDATE' | 'DELETE';
  hubId: string | null;
  id: string | null;
}

export const EDGE_CHANNEL = 'edgehub_edge';
