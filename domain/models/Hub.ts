import { DataTypes, Model, type CreationOptional, type InferAttributes, type InferCreationAttributes, type Sequelize } from 'sequelize';

export interface HubFeatures {
  ipsec: boolean;
}

/** The quotas the operator set for a hub; one absent is the service's default (domain/commands/hubQuotas.ts). */
export interface HubQuotaOverrides {
  shares?: number;
  tcpPorts?: number;
}

export class Hub extends Model<InferAttributes<Hub>, InferCreationAttributes<Hub>> {
  declare id: string;
  declare name: string;
  declare features: HubFeatures;
  declare quotas: CreationOptional<HubQuotaOverrides>;
  declare createdAt: CreationOptional<Date>;
  declare updatedAt: CreationOptional<Date>;
}

export function initModel(sequelize: Sequelize): void {
  Hub.init(
    {
      id: { type: DataTypes.TEXT, primaryKey: true },
      name: { type: DataTypes.TEXT, allowNull: false },
      features: { type: DataTypes.JSONB, allowNull: false, defaultValue: { ipsec: false } },
      quotas: { type: DataTypes.JSONB, allowNull: false, defaultValue: {} },
      createdAt: DataTypes.DATE,
      updatedAt: DataTypes.DATE,
    },
    { sequelize, tableName: 'hubs' },
  );
}
