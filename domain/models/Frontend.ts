import { DataTypes, Model, type CreationOptional, type InferAttributes, type InferCreationAttributes, type Sequelize } from 'sequelize';

/**
 * An ingress point. Standard frontends have no hub and are listed for every hub; a custom frontend's row carries
 * its hub and `customFrontendId`, and is listed for that hub only once ACTIVE.
 */
export class Frontend extends Model<InferAttributes<Frontend>, InferCreationAttributes<Frontend>> {
  declare id: string;
  declare hubId: CreationOptional<string | null>;
  declare customFrontendId: CreationOptional<string | null>;
  declare publicName: string;
  declare urlTemplate: string;
  declare active: CreationOptional<boolean>;
  declare createdAt: CreationOptional<Date>;
}

export function initModel(sequelize: Sequelize): void {
  Frontend.init(
    {
      id: { type: DataTypes.TEXT, primaryKey: true },
      hubId: { type: DataTypes.TEXT, allowNull: true },
      customFrontendId: { type: DataTypes.TEXT, allowNull: true },
      publicName: { type: DataTypes.TEXT, allowNull: false },
      urlTemplate: { type: DataTypes.TEXT, allowNull: false },
      active: { type: DataTypes.BOOLEAN, allowNull: false, defaultValue: true },
      createdAt: DataTypes.DATE,
    },
    { sequelize, tableName: 'frontends', updatedAt: false },
  );
}
