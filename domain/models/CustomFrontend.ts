import { DataTypes, Model, type CreationOptional, type InferAttributes, type InferCreationAttributes, type Sequelize } from 'sequelize';

export const CUSTOM_FRONTEND_STATUSES = ['NEW', 'PENDING', 'ACTIVE', 'ERROR'] as const;
export type CustomFrontendStatus = (typeof CUSTOM_FRONTEND_STATUSES)[number];

/**
 * A hub's own hostname as an ingress point. NEW until its hosting infrastructure exists, PENDING until its DNS
 * records resolve as required, then ACTIVE with a certificate. Its `frontends` row (frontendId) is what shares use.
 * ERROR is terminal: provisioning spent its attempts or the DNS wait ended (`dnsMessage` says which); an ERROR
 * frontend no longer holds its hostname.
 */
export class CustomFrontend extends Model<InferAttributes<CustomFrontend>, InferCreationAttributes<CustomFrontend>> {
  declare id: string;
  declare hubId: string;
  declare hostname: string;
  declare domainName: string;
  declare frontendId: string;
  declare status: CustomFrontendStatus;
  declare ingressAddresses: CreationOptional<string[] | null>;
  declare validationName: CreationOptional<string | null>;
  declare validationValue: CreationOptional<string | null>;
  declare dnsMessage: CreationOptional<string | null>;
  declare dnsWaitUntil: CreationOptional<Date | null>;
  declare certificatePem: CreationOptional<string | null>;
  declare certificateKeySealed: CreationOptional<string | null>;
  declare certificateIssuer: CreationOptional<string | null>;
  declare certificateExpiresAt: CreationOptional<Date | null>;
  declare certificateFailures: CreationOptional<number>;
  declare certificateRetryAt: CreationOptional<Date | null>;
  declare createdBy: string;
  declare createdAt: CreationOptional<Date>;
  declare updatedAt: CreationOptional<Date>;
}

export function initModel(sequelize: Sequelize): void {
  CustomFrontend.init(
    {
      id: { type: DataTypes.TEXT, primaryKey: true },
      hubId: { type: DataTypes.TEXT, allowNull: false },
      hostname: { type: DataTypes.TEXT, allowNull: false },
      domainName: { type: DataTypes.TEXT, allowNull: false },
      frontendId: { type: DataTypes.TEXT, allowNull: false },
      status: { type: DataTypes.TEXT, allowNull: false },
      ingressAddresses: { type: DataTypes.JSONB, allowNull: true },
      validationName: { type: DataTypes.TEXT, allowNull: true },
      validationValue: { type: DataTypes.TEXT, allowNull: true },
      dnsMessage: { type: DataTypes.TEXT, allowNull: true },
      dnsWaitUntil: { type: DataTypes.DATE, allowNull: true },
      certificatePem: { type: DataTypes.TEXT, allowNull: true },
      certificateKeySealed: { type: DataTypes.TEXT, allowNull: true },
      certificateIssuer: { type: DataTypes.TEXT, allowNull: true },
      certificateExpiresAt: { type: DataTypes.DATE, allowNull: true },
      certificateFailures: { type: DataTypes.INTEGER, allowNull: false, defaultValue: 0 },
      certificateRetryAt: { type: DataTypes.DATE, allowNull: true },
      createdBy: { type: DataTypes.TEXT, allowNull: false },
      createdAt: DataTypes.DATE,
      updatedAt: DataTypes.DATE,
    },
    { sequelize, tableName: 'custom_frontends' },
  );
}
