/** Which verified emails may reach a share: the auth provider's patterns and the share's own email domains. */
import type { LoginProvider, ShareRoute } from '../../types.js';

/** `*@example.com` (or any pattern with a leading `*`) matches by suffix; anything else is an exact address. */
export function emailMatches(email: string, patterns: string[]): boolean {
  const address = email.toLowerCase();
  return patterns.some((raw) => {
    const pattern = raw.trim().toLowerCase();
    if (!pattern) return false;
    if (pattern.startsWith('*')) return address.endsWith(pattern.slice(1));
    return address === pattern;
  });
}

/** The share's oauthEmailDomains: `example.com`, `@example.com` or `*@example.com`, compared with the email's domain. */
export function domainMatches(email: string, domains: string[]): boolean {
  const domain = email.toLowerCase().split('@').pop() ?? '';
  return domains.some((d) => d.trim().toLowerCase().replace(/^\*?@/, '') === domain);
}

/** Why an email may not reach the share, or undefined when it may. An empty pattern list restricts nothing. */
export function emailRefusal(email: string, route: ShareRoute): string | undefined {
  const provider = route.auth as LoginProvider;
  if (provider.emailPatterns.length && !emailMatches(email, provider.emailPatterns)) return `${email} is not allowed by the auth provider's email patterns`;
  if (route.emailDomains?.length && !domainMatches(email, route.emailDomains)) return `${email} is not in the share's email domains`;
  return undefined;
}
