import type { MigrationContext } from '../migrate.js';

/**
 * IPsec tunnels and IPsec shares (the API's records), plus the local IPsec provider's own state
 * (`ipsec_local_*`: what a cloud account would hold: load balancers, VPN connections, listeners).
 * Rows are kept at status DELETED; the partial unique indexes ignore them so a name, port or location can be reused.
 */
export async function up({ context: q }: MigrationContext): Promise<void> {
  await q.sequelize.query(`
    CREATE TABLE ipsec_tunnels (
      id text PRIMARY KEY,
      hub_id text NOT NULL REFERENCES hubs(id) ON DELETE CASCADE,
      name text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
      location_id text,
      status text NOT NULL CHECK (status IN ('NEW', 'DEPLOYED', 'ERROR', 'DELETING', 'DELETED')),
      status_message text NOT NULL DEFAULT '',
      peer_public_ip text NOT NULL,
      peer_cidr text NOT NULL,
      nlb_private_ip text,
      nlb_dns_name text NOT NULL DEFAULT '',
      vpn_connection_id text NOT NULL DEFAULT '',
      outside_ip_address text,
      inside_cidr text,
      pre_shared_key_sealed text,
      tunnel_options jsonb,
      created_by text NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now()
    );
    -- one live tunnel per hub and location; a tunnel without location counts as one location
    CREATE UNIQUE INDEX ipsec_tunnels_hub_location_key ON ipsec_tunnels (hub_id, COALESCE(location_id, '')) WHERE status <> 'DELETED';
    -- target of the same-hub foreign key from ipsec_shares
    CREATE UNIQUE INDEX ipsec_tunnels_hub_id_key ON ipsec_tunnels (hub_id, id);
    CREATE INDEX ipsec_tunnels_hub_created_idx ON ipsec_tunnels (hub_id, created_at);

    CREATE TABLE ipsec_shares (
      id text PRIMARY KEY,
      hub_id text NOT NULL REFERENCES hubs(id) ON DELETE CASCADE,
      name text NOT NULL CHECK (name ~ '^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?$'),
      ipsec_tunnel_id text NOT NULL,
      env_z_id text NOT NULL,
      target text NOT NULL,
      ingress_port integer NOT NULL CHECK (ingress_port BETWEEN 1 AND 65535),
      location_id text,
      status text NOT NULL CHECK (status IN ('NEW', 'DEPLOYED', 'ERROR', 'DELETING', 'DELETED')),
      status_message text NOT NULL DEFAULT '',
      created_by text NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(),
      FOREIGN KEY (hub_id, ipsec_tunnel_id) REFERENCES ipsec_tunnels (hub_id, id) ON DELETE CASCADE,
      FOREIGN KEY (hub_id, env_z_id) REFERENCES environments (hub_id, env_z_id) ON DELETE CASCADE
    );
    CREATE UNIQUE INDEX ipsec_shares_tunnel_port_key ON ipsec_shares (ipsec_tunnel_id, ingress_port) WHERE status <> 'DELETED';
    CREATE UNIQUE INDEX ipsec_shares_hub_name_key ON ipsec_shares (hub_id, lower(name)) WHERE status <> 'DELETED';
    CREATE INDEX ipsec_shares_hub_created_idx ON ipsec_shares (hub_id, created_at);

    -- local provider: a network load balancer and a site-to-site VPN connection per tunnel (idempotent by tunnel id)
    CREATE TABLE ipsec_local_tunnels (
      tunnel_id text PRIMARY KEY,
      nlb_private_ip inet NOT NULL,
      nlb_dns_name text NOT NULL,
      vpn_connection_id text UNIQUE,
      outside_ip_address inet,
      inside_cidr cidr,
      pre_shared_key_sealed text,
      tunnel_options jsonb,
      state text NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'available', 'deleting', 'deleted')),
      created_at timestamptz NOT NULL DEFAULT now(),
      released_at timestamptz
    );
    CREATE UNIQUE INDEX ipsec_local_tunnels_nlb_ip_key ON ipsec_local_tunnels (nlb_private_ip) WHERE released_at IS NULL;
    CREATE UNIQUE INDEX ipsec_local_tunnels_outside_ip_key ON ipsec_local_tunnels (outside_ip_address) WHERE released_at IS NULL;
    CREATE UNIQUE INDEX ipsec_local_tunnels_inside_cidr_key ON ipsec_local_tunnels (inside_cidr) WHERE released_at IS NULL;

    -- local provider: a load balancer listener per IPsec share (idempotent by share id)
    CREATE TABLE ipsec_local_listeners (
      share_id text PRIMARY KEY,
      tunnel_id text NOT NULL,
      listener_id text NOT NULL,
      ingress_port integer NOT NULL,
      target text NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(),
      released_at timestamptz
    );
    CREATE UNIQUE INDEX ipsec_local_listeners_port_key ON ipsec_local_listeners (tunnel_id, ingress_port) WHERE released_at IS NULL;
  `);
}

export async function down(): Promise<void> {
  throw new Error('migrations are one-way');
}
