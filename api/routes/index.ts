/**
 * Every resource's routes, one import each: the import graph is the architecture (an editor's "find references" and
 * the import-rule test both follow it). A new resource adds its file here.
 */
import type { Routes } from '../router.js';
import admin from './admin.js';
import agents from './agents.js';
import authProviders from './authProviders.js';
import certificateRequestTokens from './certificateRequestTokens.js';
import clientCertificates from './clientCertificates.js';
import console from './console.js';
import customFrontends from './customFrontends.js';
import downloads from './downloads.js';
import enrollment from './enrollment.js';
import environments from './environments.js';
import executions from './executions.js';
import frontends from './frontends.js';
import health from './health.js';
import healthChecks from './healthChecks.js';
import inspect from './inspect.js';
import ipsec from './ipsec.js';
import ipsecMetrics from './ipsecMetrics.js';
import jwks from './jwks.js';
import metrics from './metrics.js';
import openapi from './openapi.js';
import pki from './pki.js';
import telemetry from './telemetry.js';
import shares from './shares.js';
import signingKeys from './signingKeys.js';
import usage from './usage.js';

export const routeModules: ((routes: Routes) => void)[] = [
  admin,
  agents,
  authProviders,
  certificateRequestTokens,
  clientCertificates,
  console,
  customFrontends,
  downloads,
  enrollment,
  environments,
  executions,
  frontends,
  health,
  healthChecks,
  inspect,
  ipsec,
  ipsecMetrics,
  jwks,
  metrics,
  openapi,
  pki,
  telemetry,
  shares,
  signingKeys,
  usage,
];
