import { DataTypes, Model, type CreationOptional, type InferAttributes, type InferCreationAttributes, type Sequelize } from 'sequelize';

/** An API key of one hub. Only the SHA-256 of the token is stored. */
export class ApiKey extends Model<InferAttributes<ApiKey>, InferCreationAttributes<ApiKey>> {
  declare id: string;
  declare hubId: string;
  declare name: string;
  declare username: string;
  declare tokenHash: Buffer;
  declare createdAt: CreationOptional<Date>;
  declare revokedAt: CreationOptional<Date | null>;
}

export function initModel(sequelize: Sequelize): void {
  ApiKey.init(
    {
      id: { type: DataTypes.TEXT, primaryKey: true },
      hubId: { type: DataTypes.TEXT, allowNull: false },
      name: { type: DataTypes.TEXT, allowNull: false },
      username: { type: DataTypes.TEXT, allowNull: false },
      tokenHash: { type: DataTypes.BLOB, allowNull: false },
      createdAt: DataTypes.DATE,
      revokedAt: { type: DataTypes.DATE, allowNull: true },
    },
    { sequelize, tableName: 'api_keys', updatedAt: false },
  );
}
