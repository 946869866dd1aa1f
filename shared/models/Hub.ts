import { DataTypes, Model, type CreationOptional, type InferAttributes, type InferCreationAttributes, type Sequelize } from 'sequelize';

export interface HubFeatures {
  ipsec: boolean;
}

export class Hub extends Model<InferAttributes<Hub>, InferCreationAttributes<Hub>> {
  declare id: string;
  declare name: string;
  declare features: HubFeatures;
  declare createdAt: CreationOptional<Date>;
  declare updatedAt: CreationOptional<Date>;
}

export function initModel(sequelize: Sequelize): void {
  Hub.init(
    {
      id: { type: DataTypes.TEXT, primaryKey: true },
      name: { type: DataTypes.TEXT, allowNull: false },
      features: { type: DataTypes.JSONB, allowNull: false, defaultValue: { ipsec: false } },
      createdAt: DataTypes.DATE,
      updatedAt: DataTypes.DATE,
    },
    { sequelize, tableName: 'hubs' },
  );
}
