import { QueryTypes } from 'sequelize';
import { db } from '../db.js';

const present = new Set<string>();

/**
 * Whether a table of another area exists yet (plain shares and IPsec shares come with their own migrations).
 * Only a positive answer is cached: tables are created, never dropped.
 */
export async function tableExists(name: 'shares' | 'ipsec_shares' | 'ipsec_tunnels'): Promise<boolean> {
  if (present.has(name)) return true;
  const [row] = await db().query<{ found: boolean }>('SELECT to_regclass($1) IS NOT NULL AS found', {
    bind: [`public.${name}`],
    type: QueryTypes.SELECT,
  });
  if (row?.found) present.add(name);
  return Boolean(row?.found);
}
