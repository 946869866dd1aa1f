/**
 * Every setting of the service, in one zod schema: its name, type, bounds, default and a one-line description. The
 * environment is read here and nowhere else (test/system/settings.test.ts scans for reads elsewhere);
 * shared/config.ts shapes the parsed values for the code, and docs/configuration.md is generated from this list
 * (`npm run docs:settings`; a test fails when the page and the schema differ).
 */
import { z } from 'zod';
import { edgeSettings } from './settings/edge.js';
import type { Entry, Group } from './settings/kinds.js';
import { platformSettings } from './settings/platform.js';
import { securitySettings } from './settings/security.js';
import { serviceSettings } from './settings/service.js';

export class ConfigError extends Error {}

/** Every setting, in the order the settings page lists them. */
const SETTINGS = { ...serviceSettings, ...edgeSettings, ...platformSettings, ...securitySettings };

type Settings = typeof SETTINGS;
type SettingName = keyof Settings;
export type SettingsValues = { [K in SettingName]: z.output<Settings[K]['schema']> };

const schema = z.object(Object.fromEntries(Object.entries(SETTINGS).map(([name, e]) => [name, e.schema])) as { [K in SettingName]: Settings[K]['schema'] });

/** The settings from `env`, validated; a ConfigError names each bad one. */
export function readSettings(env: NodeJS.ProcessEnv = process.env): SettingsValues {
  const parsed = schema.safeParse(env);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`);
    throw new ConfigError(`invalid configuration:\n  ${lines.join('\n  ')}`);
  }
  return parsed.data as SettingsValues;
}

/**
 * One setting, read now, falling back to its default when it is missing or invalid: for what must work before the
 * whole configuration is known to be valid (the logger that reports a bad configuration, the process's role).
 */
export function setting<K extends SettingName>(name: K, env: NodeJS.ProcessEnv = process.env): SettingsValues[K] {
  const e = SETTINGS[name];
  const parsed = e.schema.safeParse(env[name]);
  return (parsed.success ? parsed.data : e.schema.safeParse(undefined).data) as SettingsValues[K];
}

/**
 * Gives a setting a value for this process and the processes it starts, unless the environment already has one:
 * e.g. each process's role (HUB_PROCESS), which a parent that started it may have named already.
 */
export function presetSetting(name: SettingName, value: string): void {
  process.env[name] ??= value;
}

/** The settings page: one table per group, each setting with its meaning and default. */
export function settingsMarkdown(): string {
  const groups = new Map<Group, string[]>();
  for (const [name, e] of Object.entries(SETTINGS) as [SettingName, Entry<z.ZodType>][]) {
    const fallback = e.shown ?? shownDefault(e.schema);
    const rows = groups.get(e.group) ?? [];
    rows.push(`| \`${name}\` | ${e.description} | ${fallback} |`);
    groups.set(e.group, rows);
  }
  return [...groups]
    .map(([group, rows]) => [`### ${group[0].toUpperCase()}${group.slice(1)}`, '', '| variable | meaning | default |', '|---|---|---|', ...rows].join('\n'))
    .join('\n\n');
}

function shownDefault(s: z.ZodType): string {
  const parsed = s.safeParse(undefined);
  if (!parsed.success || parsed.data === undefined || (Array.isArray(parsed.data) && parsed.data.length === 0)) return 'none';
  return `\`${String(parsed.data)}\``;
}
