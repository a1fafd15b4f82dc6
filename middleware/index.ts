// Public surface of the kya gate (re-exports only).
export { createGate, conditionalGate, getGateResult, captureWallet, type Gate } from './express';
export {
  parseOptions,
  GateOptionsError,
  GATE_VERSION,
  type GateOptions,
  type GatePolicy,
  type GateIdentity,
  type GateDenial,
  type GateLogger,
  type CreateSessionOptions,
  type SessionOptions,
} from './options';
export {
  GateCore,
  GateRuntimeError,
  type GateResult,
  type Evaluation,
  type InfraReason,
  type SignerVerdict,
  type GateCode,
  type WalletProofKind,
} from './core';
export {
  extractPaymentSigner,
  hasPaymentHeader,
  buildSignerConfig,
  USDC_BASE,
  USDC_BASE_SEPOLIA,
  type PaymentSigner,
  type SignerProof,
  type SignerErrorCode,
  type EvmAssetDomain,
} from './signer';
export type { CaptureInput, CaptureResult } from './capture';
export { ucpProfile, UCP_PROFILE_PATH } from './paymentHandler';
export {
  buildMppHandlerConfig,
  buildMerchantProfile,
  validateMppHandlerConfig,
  validateMerchantProfile,
  mppHandlerId,
  MPP_NETWORKS,
  MPP_CHAIN_IDS,
  DEFAULT_MPP_HANDLER_ID,
} from '../shared/paymentHandler';
export type * from './wire';
export {
  verifyWebhook,
  WebhookVerificationError,
  WEBHOOK_SIGNATURE_HEADER,
  WEBHOOK_EVENT_TYPES,
  type VerifyWebhookOptions,
  type WebhookVerificationFailure,
  type WebhookEvent,
  type WebhookEventType,
} from './webhook';
