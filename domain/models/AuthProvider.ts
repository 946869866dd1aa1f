import { DataTypes, Model, type CreationOptional, type InferAttributes, type InferCreationAttributes, type Sequelize } from 'sequelize';

export const AUTH_PROVIDER_TYPES = ['OIDC', 'GOOGLE', 'GITHUB'] as const;
export type AuthProviderType = (typeof AUTH_PROVIDER_TYPES)[number];

/** An identity provider a custom frontend can use to authenticate share users. The client secret is sealed. */
export class AuthProvider extends Model<InferAttributes<AuthProvider>, InferCreationAttributes<AuthProvider>> {
  declare id: string;
  declare hubId: string;
  declare name: string;
  declare type: AuthProviderType;
  declare clientId: string;
  declare clientSecretSealed: string;
  declare issuerUrl: string | null;
  declare scopes: string[];
  declare emailPatterns: string[];
  declare createdBy: string;
  declare createdAt: CreationOptional<Date>;
  declare updatedAt: CreationOptional<Date>;
}

export function initModel(sequelize: Sequelize): void {
  AuthProvider.init(
    {
      id: { type: DataTypes.TEXT, primaryKey: true },
      hubId: { type: DataTypes.TEXT, allowNull: false },
      name: { type: DataTypes.TEXT, allowNull: false },
      type: { type: DataTypes.TEXT, allowNull: false },
      clientId: { type: DataTypes.TEXT, allowNull: false },
      clientSecretSealed: { type: DataTypes.TEXT, allowNull: false },
      issuerUrl: { type: DataTypes.TEXT, allowNull: true },
      scopes: { type: DataTypes.JSONB, allowNull: false, defaultValue: [] },
      emailPatterns: { type: DataTypes.JSONB, allowNull: false, defaultValue: [] },
      createdBy: { type: DataTypes.TEXT, allowNull: false },
      createdAt: DataTypes.DATE,
      updatedAt: DataTypes.DATE,
    },
    { sequelize, tableName: 'auth_providers' },
  );
}
