/**
 * A policy's header rules, applied to the head the edge sends to the target and to the target's answer head: `set`
 * replaces every line of a name (or adds one), `remove` deletes them. The edge's own headers are never among them
 * (the API refuses them), so the rules cannot forge or hide a forwarding or identity header.
 */
import type { OutgoingHttpHeaders } from 'node:http';
import type { HeaderRules } from '../../shared/sharePolicy.js';

export interface CompiledHeaderRules {
  /** Lower-case names whose lines are dropped (removed, or replaced by `set`). */
  readonly drop: ReadonlySet<string>;
  /** Flat name, value lines added. */
  readonly add: readonly string[];
}

/** `alsoDrop`: names dropped besides the rules' (the credentials basic auth took). */
export function compileHeaderRules(rules: HeaderRules | undefined, alsoDrop: string[] = []): CompiledHeaderRules | undefined {
  if (!alsoDrop.length && (!rules || (!rules.remove?.length && !Object.keys(rules.set ?? {}).length))) return undefined;
  const drop = new Set<string>(alsoDrop);
  const add: string[] = [];
  for (const name of rules?.remove ?? []) drop.add(name.toLowerCase());
  for (const [name, value] of Object.entries(rules?.set ?? {})) {
    drop.add(name.toLowerCase());
    add.push(name, value);
  }
  return { drop, add };
}

/** Flat header lines (name, value, ...) with the rules applied. */
export function applyToLines(lines: string[], rules: CompiledHeaderRules | undefined): string[] {
  if (!rules) return lines;
  const out: string[] = [];
  for (let i = 0; i < lines.length; i += 2) if (!rules.drop.has(lines[i].toLowerCase())) out.push(lines[i], lines[i + 1]);
  for (const line of rules.add) out.push(line);
  return out;
}

/** Headers as an object (node:http2) with the rules applied, in place. */
export function applyToObject(headers: OutgoingHttpHeaders, rules: CompiledHeaderRules | undefined): OutgoingHttpHeaders {
  if (!rules) return headers;
  for (const name of Object.keys(headers)) if (rules.drop.has(name.toLowerCase())) delete headers[name];
  for (let i = 0; i < rules.add.length; i += 2) headers[rules.add[i].toLowerCase()] = rules.add[i + 1];
  return headers;
}
