/** Shapes shared by the edge process and its access-control modules (see the edge hooks contract). */

/** The route of a share, as the edge keeps it in memory. */
export interface ShareRoute {
  zId: string;
  hubId: string;
  envZId: string;
  frontendId: string;
  target: URL;
  mutualTls: boolean;
  /** The share's auth provider, secret decrypted. */
  auth: LoginProvider | null;
  /** The share's own oauthEmailDomains when set (an extra restriction). */
  emailDomains: string[] | null;
  /** oauthAuthorizationCheckInterval, default PT3H. */
  checkIntervalMs: number;
}

export interface LoginProvider {
  id: string;
  type: 'OIDC' | 'GOOGLE' | 'GITHUB';
  clientId: string;
  clientSecret: string;
  issuerUrl: string | null;
  scopes: string[];
  /** e.g. ["*@example.com", "bob@example.org"] */
  emailPatterns: string[];
}

/** A change notification (NOTIFY payload, JSON) as the edge forwards it to modules. */
export interface EdgeChange {
  table: string;
  op: 'INSERT' | 'UPDATE' | 'DELETE';
  hubId: string | null;
  id: string | null;
}
