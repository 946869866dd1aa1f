import { DataTypes, Model, type InferAttributes, type InferCreationAttributes, type Sequelize } from 'sequelize';

/** A frontend a share is published on (the database refuses deleting a frontend that still carries shares). */
export class ShareFrontend extends Model<InferAttributes<ShareFrontend>, InferCreationAttributes<ShareFrontend>> {
  declare shareZId: string;
  declare frontendId: string;
  declare position: number;
}

export function initModel(sequelize: Sequelize): void {
  ShareFrontend.init(
    {
      shareZId: { type: DataTypes.TEXT, primaryKey: true },
      frontendId: { type: DataTypes.TEXT, primaryKey: true },
      position: { type: DataTypes.INTEGER, allowNull: false },
    },
    { sequelize, tableName: 'share_frontends', timestamps: false },
  );
}
