import { DataTypes, Model, type InferAttributes, type InferCreationAttributes, type Sequelize } from 'sequelize';

/** An auth provider attached to a custom frontend (same hub; the database refuses deleting an attached provider). */
export class CustomFrontendAuthProvider extends Model<InferAttributes<CustomFrontendAuthProvider>, InferCreationAttributes<CustomFrontendAuthProvider>> {
  declare hubId: string;
  declare customFrontendId: string;
  declare authProviderId: string;
  declare position: number;
}

export function initModel(sequelize: Sequelize): void {
  CustomFrontendAuthProvider.init(
    {
      hubId: { type: DataTypes.TEXT, allowNull: false },
      customFrontendId: { type: DataTypes.TEXT, primaryKey: true },
      authProviderId: { type: DataTypes.TEXT, primaryKey: true },
      position: { type: DataTypes.INTEGER, allowNull: false },
    },
    { sequelize, tableName: 'custom_frontend_auth_providers', timestamps: false },
  );
}
