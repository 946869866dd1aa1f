import { DataTypes, Model, type CreationOptional, type InferAttributes, type InferCreationAttributes, type Sequelize } from 'sequelize';
import type { IpsecStatus } from './IpsecTunnel.js';

/** A private `host:port` target published on a listener port of an IPsec tunnel's load balancer. */
export class IpsecShare extends Model<InferAttributes<IpsecShare>, InferCreationAttributes<IpsecShare>> {
  declare id: string;
  declare hubId: string;
  declare name: string;
  declare ipsecTunnelId: string;
  declare envZId: string;
  declare target: string;
  declare ingressPort: number;
  declare locationId: string | null;
  declare status: IpsecStatus;
  declare statusMessage: CreationOptional<string>;
  declare createdBy: string;
  declare createdAt: CreationOptional<Date>;
  declare updatedAt: CreationOptional<Date>;
}

export function initModel(sequelize: Sequelize): void {
  IpsecShare.init(
    {
      id: { type: DataTypes.TEXT, primaryKey: true },
      hubId: { type: DataTypes.TEXT, allowNull: false },
      name: { type: DataTypes.TEXT, allowNull: false },
      ipsecTunnelId: { type: DataTypes.TEXT, allowNull: false },
      envZId: { type: DataTypes.TEXT, allowNull: false },
      target: { type: DataTypes.TEXT, allowNull: false },
      ingressPort: { type: DataTypes.INTEGER, allowNull: false },
      locationId: { type: DataTypes.TEXT, allowNull: true },
      status: { type: DataTypes.TEXT, allowNull: false },
      statusMessage: { type: DataTypes.TEXT, allowNull: false, defaultValue: '' },
      createdBy: { type: DataTypes.TEXT, allowNull: false },
      createdAt: DataTypes.DATE,
      updatedAt: DataTypes.DATE,
    },
    { sequelize, tableName: 'ipsec_shares' },
  );
}
