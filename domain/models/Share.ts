import type { StoredPolicy } from '../../shared/sharePolicy.js';
import { DataTypes, Model, type CreationOptional, type InferAttributes, type InferCreationAttributes, type Sequelize } from 'sequelize';

export const SHARE_STATUSES = ['PROVISIONING', 'ACTIVE', 'ERROR'] as const;
export type ShareStatus = (typeof SHARE_STATUSES)[number];

/** A public endpoint on a frontend (`frontendEndpoint`) that proxies to `target`; `zId` is its share token. */
export class Share extends Model<InferAttributes<Share>, InferCreationAttributes<Share>> {
  declare zId: string;
  declare hubId: string;
  declare envZId: string;
  declare name: string;
  declare frontendId: string;
  declare frontendEndpoint: string;
  declare target: string;
  declare authProviderId: string | null;
  declare status: ShareStatus;
  /** Served only over TLS to clients presenting one of the hub's client certificates. */
  declare mutualTls: CreationOptional<boolean>;
  /** What the share speaks to its target: 'http1' (HTTP/1.1) or 'h2' (HTTP/2, e.g. gRPC). */
  declare targetProtocol: CreationOptional<'http1' | 'h2'>;
  /** 'http' (routed by host) or 'tcp' (a port of HUB_EDGE_TCP_PORTS, `tcpPort`, carried as bytes). */
  declare protocol: CreationOptional<'http' | 'tcp'>;
  declare tcpPort: CreationOptional<number | null>;
  /** A TCP share's idle timeout (ISO 8601 duration); null = the edge's HUB_EDGE_TCP_IDLE_TIMEOUT. */
  declare tcpIdleTimeout: CreationOptional<string | null>;
  /** Email domains a login must also match (beyond the auth provider's patterns); null = no extra restriction. */
  declare oauthEmailDomains: CreationOptional<string[] | null>;
  /** ISO 8601 duration after which a login session is checked again; null = the default (PT3H). */
  declare oauthCheckInterval: CreationOptional<string | null>;
  /** The traffic policy (shared/sharePolicy.ts: IP rules, rate limit, basic auth, headers, error pages); null = none. */
  declare policy: CreationOptional<StoredPolicy | null>;
  /** Exchanges are recorded by every edge for the share's request inspector. */
  declare inspect: CreationOptional<boolean>;
  /** Which of its environment's agents a client's requests go to: 'none', 'client-ip' or 'cookie'. */
  declare affinity: CreationOptional<'none' | 'client-ip' | 'cookie'>;
  declare shareMode: CreationOptional<string>;
  declare backendMode: CreationOptional<string>;
  declare frontendSelection: CreationOptional<string>;
  declare reserved: CreationOptional<boolean>;
  declare limited: CreationOptional<boolean>;
  declare createdBy: string;
  declare createdAt: CreationOptional<Date>;
  declare updatedAt: CreationOptional<Date>;
}

export function initModel(sequelize: Sequelize): void {
  Share.init(
    {
      zId: { type: DataTypes.TEXT, primaryKey: true },
      hubId: { type: DataTypes.TEXT, allowNull: false },
      envZId: { type: DataTypes.TEXT, allowNull: false },
      name: { type: DataTypes.TEXT, allowNull: false },
      frontendId: { type: DataTypes.TEXT, allowNull: false },
      frontendEndpoint: { type: DataTypes.TEXT, allowNull: false },
      target: { type: DataTypes.TEXT, allowNull: false },
      authProviderId: { type: DataTypes.TEXT, allowNull: true },
      status: { type: DataTypes.TEXT, allowNull: false },
      mutualTls: { type: DataTypes.BOOLEAN, allowNull: false, defaultValue: false },
      targetProtocol: { type: DataTypes.TEXT, allowNull: false, defaultValue: 'http1' },
      protocol: { type: DataTypes.TEXT, allowNull: false, defaultValue: 'http' },
      tcpPort: { type: DataTypes.INTEGER, allowNull: true },
      tcpIdleTimeout: { type: DataTypes.TEXT, allowNull: true },
      oauthEmailDomains: { type: DataTypes.JSONB, allowNull: true },
      oauthCheckInterval: { type: DataTypes.TEXT, allowNull: true },
      inspect: { type: DataTypes.BOOLEAN, allowNull: false, defaultValue: false },
      policy: { type: DataTypes.JSONB, allowNull: true },
      affinity: { type: DataTypes.TEXT, allowNull: false, defaultValue: 'none' },
      shareMode: { type: DataTypes.TEXT, allowNull: false, defaultValue: 'public' },
      backendMode: { type: DataTypes.TEXT, allowNull: false, defaultValue: 'proxy' },
      frontendSelection: { type: DataTypes.TEXT, allowNull: false, defaultValue: 'public' },
      reserved: { type: DataTypes.BOOLEAN, allowNull: false, defaultValue: false },
      limited: { type: DataTypes.BOOLEAN, allowNull: false, defaultValue: false },
      createdBy: { type: DataTypes.TEXT, allowNull: false },
      createdAt: DataTypes.DATE,
      updatedAt: DataTypes.DATE,
    },
    { sequelize, tableName: 'shares' },
  );
}
