/**
 * Every model, one import each: shared/db.ts initialises them all (`initModel`), then wires their associations
 * (`associate`). A new table's model adds its file here.
 */
import type { Sequelize } from 'sequelize';
import * as AcmeAccount from './AcmeAccount.js';
import * as AcmeValidationRecord from './AcmeValidationRecord.js';
import * as ApiKey from './ApiKey.js';
import * as AuthProvider from './AuthProvider.js';
import * as CertificateAuthority from './CertificateAuthority.js';
import * as CertificateRequestToken from './CertificateRequestToken.js';
import * as ClientCertificate from './ClientCertificate.js';
import * as CustomFrontend from './CustomFrontend.js';
import * as CustomFrontendAuthProvider from './CustomFrontendAuthProvider.js';
import * as Environment from './Environment.js';
import * as Execution from './Execution.js';
import * as Frontend from './Frontend.js';
import * as FrontendIssuer from './FrontendIssuer.js';
import * as HealthCheck from './HealthCheck.js';
import * as Hub from './Hub.js';
import * as IpsecShare from './IpsecShare.js';
import * as IpsecTunnel from './IpsecTunnel.js';
import * as Share from './Share.js';
import * as ShareFrontend from './ShareFrontend.js';
import * as SigningKey from './SigningKey.js';

interface ModelModule {
  initModel(sequelize: Sequelize): void;
  associate?(): void;
}

export const modelModules: ModelModule[] = [
  AcmeAccount,
  AcmeValidationRecord,
  ApiKey,
  AuthProvider,
  CertificateAuthority,
  CertificateRequestToken,
  ClientCertificate,
  CustomFrontend,
  CustomFrontendAuthProvider,
  Environment,
  Execution,
  Frontend,
  FrontendIssuer,
  HealthCheck,
  Hub,
  IpsecShare,
  IpsecTunnel,
  Share,
  ShareFrontend,
  SigningKey,
];
