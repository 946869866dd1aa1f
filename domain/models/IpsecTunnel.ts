import { DataTypes, Model, type CreationOptional, type InferAttributes, type InferCreationAttributes, type Sequelize } from 'sequelize';

export const IPSEC_STATUSES = ['NEW', 'DEPLOYED', 'ERROR', 'DELETING', 'DELETED'] as const;
export type IpsecStatus = (typeof IPSEC_STATUSES)[number];

export type { TunnelOptions } from '../../shared/ipsec/options.js';
import type { TunnelOptions } from '../../shared/ipsec/options.js';

/** A VPN ingress point of a hub. The provisioned fields are filled when it reaches DEPLOYED. */
export class IpsecTunnel extends Model<InferAttributes<IpsecTunnel>, InferCreationAttributes<IpsecTunnel>> {
  declare id: string;
  declare hubId: string;
  declare name: string;
  declare locationId: string | null;
  declare status: IpsecStatus;
  /** Why the tunnel is in ERROR (the failed execution carries the same). */
  declare statusMessage: CreationOptional<string>;
  declare peerPublicIp: string;
  declare peerCidr: string;
  /** Pinned on create, or the address the provider allocated. */
  declare nlbPrivateIp: string | null;
  declare nlbDnsName: CreationOptional<string>;
  declare vpnConnectionId: CreationOptional<string>;
  declare outsideIpAddress: CreationOptional<string | null>;
  declare insideCidr: CreationOptional<string | null>;
  /** encryptSecret(pre-shared key); only the sample configuration decrypts it. */
  declare preSharedKeySealed: CreationOptional<string | null>;
  declare tunnelOptions: CreationOptional<TunnelOptions | null>;
  declare createdBy: string;
  declare createdAt: CreationOptional<Date>;
  declare updatedAt: CreationOptional<Date>;
}

export function initModel(sequelize: Sequelize): void {
  IpsecTunnel.init(
    {
      id: { type: DataTypes.TEXT, primaryKey: true },
      hubId: { type: DataTypes.TEXT, allowNull: false },
      name: { type: DataTypes.TEXT, allowNull: false },
      locationId: { type: DataTypes.TEXT, allowNull: true },
      status: { type: DataTypes.TEXT, allowNull: false },
      statusMessage: { type: DataTypes.TEXT, allowNull: false, defaultValue: '' },
      peerPublicIp: { type: DataTypes.TEXT, allowNull: false },
      peerCidr: { type: DataTypes.TEXT, allowNull: false },
      nlbPrivateIp: { type: DataTypes.TEXT, allowNull: true },
      nlbDnsName: { type: DataTypes.TEXT, allowNull: false, defaultValue: '' },
      vpnConnectionId: { type: DataTypes.TEXT, allowNull: false, defaultValue: '' },
      outsideIpAddress: { type: DataTypes.TEXT, allowNull: true },
      insideCidr: { type: DataTypes.TEXT, allowNull: true },
      preSharedKeySealed: { type: DataTypes.TEXT, allowNull: true },
      tunnelOptions: { type: DataTypes.JSONB, allowNull: true },
      createdBy: { type: DataTypes.TEXT, allowNull: false },
      createdAt: DataTypes.DATE,
      updatedAt: DataTypes.DATE,
    },
    { sequelize, tableName: 'ipsec_tunnels' },
  );
}
