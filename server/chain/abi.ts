// Event signatures the indexer reads (ERC-8004 registries, USDC transfers with EIP-3009 authorizations) and decoders that turn raw logs into
// plain records. FeedbackRevoked is deployed both with and without `feedbackIndex` indexed; the topic hash is
// the same, so the decoder reads it from topic 3 when present and from data otherwise.
import { ethers } from 'ethers';

export const identityInterface = new ethers.Interface([
  'event Registered(uint256 indexed agentId, string agentURI, address indexed owner)',
  'event URIUpdated(uint256 indexed agentId, string newURI, address indexed updatedBy)',
  'event MetadataSet(uint256 indexed agentId, string indexed indexedMetadataKey, string metadataKey, bytes metadataValue)',
  'event Transfer(address indexed from, address indexed to, uint256 indexed tokenId)',
]);

export const reputationInterface = new ethers.Interface([
  'event NewFeedback(uint256 indexed agentId, address indexed clientAddress, uint64 feedbackIndex, int128 value, uint8 valueDecimals, string indexed indexedTag1, string tag1, string tag2, string endpoint, string feedbackURI, bytes32 feedbackHash)',
  'event FeedbackRevoked(uint256 indexed agentId, address indexed clientAddress, uint64 indexed feedbackIndex)',
]);

export const usdcInterface = new ethers.Interface([
  'event Transfer(address indexed from, address indexed to, uint256 value)',
  'event AuthorizationUsed(address indexed authorizer, bytes32 indexed nonce)',
]);

export const TOPICS = {
  Registered: identityInterface.getEvent('Registered')!.topicHash,
  URIUpdated: identityInterface.getEvent('URIUpdated')!.topicHash,
  MetadataSet: identityInterface.getEvent('MetadataSet')!.topicHash,
  Transfer: identityInterface.getEvent('Transfer')!.topicHash, // same hash for ERC-20 and ERC-721
  NewFeedback: reputationInterface.getEvent('NewFeedback')!.topicHash,
  FeedbackRevoked: reputationInterface.getEvent('FeedbackRevoked')!.topicHash,
  AuthorizationUsed: usdcInterface.getEvent('AuthorizationUsed')!.topicHash,
} as const;

const coder = ethers.AbiCoder.defaultAbiCoder();

/** ethers decodes to an untyped Result; the ABI types passed alongside say what each slot holds. */
function decodeData<T extends unknown[]>(types: string[], data: string): T {
  return coder.decode(types, data) as unknown as T;
}

function topicAddress(topic: string): string {
  return ethers.getAddress(ethers.dataSlice(topic, 12)).toLowerCase();
}

function topicUint(topic: string): string {
  return BigInt(topic).toString();
}

export type IdentityEvent =
  | { kind: 'Registered'; tokenId: string; uri: string; owner: string }
  | { kind: 'URIUpdated'; tokenId: string; uri: string; updatedBy: string }
  | { kind: 'MetadataSet'; tokenId: string; key: string; value: string }
  | { kind: 'Transfer'; tokenId: string; from: string; to: string };

/** Decodes an Identity Registry log; null for logs that are not one of the four events (or malformed). */
export function decodeIdentityLog(log: { topics: readonly string[]; data: string }): IdentityEvent | null {
  try {
    const [topic0] = log.topics;
    switch (topic0) {
      case TOPICS.Registered: {
        const [uri] = decodeData<[string]>(['string'], log.data);
        return { kind: 'Registered', tokenId: topicUint(log.topics[1]), uri, owner: topicAddress(log.topics[2]) };
      }
      case TOPICS.URIUpdated: {
        const [uri] = decodeData<[string]>(['string'], log.data);
        return { kind: 'URIUpdated', tokenId: topicUint(log.topics[1]), uri, updatedBy: topicAddress(log.topics[2]) };
      }
      case TOPICS.MetadataSet: {
        const [key, value] = decodeData<[string, string]>(['string', 'bytes'], log.data);
        return { kind: 'MetadataSet', tokenId: topicUint(log.topics[1]), key, value: ethers.hexlify(value) };
      }
      case TOPICS.Transfer: {
        if (log.topics.length !== 4) return null; // an ERC-20 Transfer from some other contract shape
        return { kind: 'Transfer', tokenId: topicUint(log.topics[3]), from: topicAddress(log.topics[1]), to: topicAddress(log.topics[2]) };
      }
      default:
        return null;
    }
  } catch {
    return null;
  }
}

export type ReputationEvent =
  | {
      kind: 'NewFeedback';
      tokenId: string;
      client: string;
      feedbackIndex: string;
      value: string;
      valueDecimals: number;
      tag1: string;
      tag2: string;
      endpoint: string;
      feedbackUri: string;
    }
  | { kind: 'FeedbackRevoked'; tokenId: string; client: string; feedbackIndex: string };

export function decodeReputationLog(log: { topics: readonly string[]; data: string }): ReputationEvent | null {
  try {
    const [topic0] = log.topics;
    if (topic0 === TOPICS.NewFeedback) {
      const [feedbackIndex, value, valueDecimals, tag1, tag2, endpoint, feedbackUri] = decodeData<[bigint, bigint, bigint, string, string, string, string]>(
        ['uint64', 'int128', 'uint8', 'string', 'string', 'string', 'string', 'bytes32'],
        log.data,
      );
      return {
        kind: 'NewFeedback',
        tokenId: topicUint(log.topics[1]),
        client: topicAddress(log.topics[2]),
        feedbackIndex: feedbackIndex.toString(),
        value: value.toString(),
        valueDecimals: Number(valueDecimals),
        tag1,
        tag2,
        endpoint,
        feedbackUri,
      };
    }
    if (topic0 === TOPICS.FeedbackRevoked) {
      const feedbackIndex = log.topics.length >= 4 ? topicUint(log.topics[3]) : decodeData<[bigint]>(['uint64'], log.data)[0].toString();
      return { kind: 'FeedbackRevoked', tokenId: topicUint(log.topics[1]), client: topicAddress(log.topics[2]), feedbackIndex };
    }
    return null;
  } catch {
    return null;
  }
}

export interface Erc20Transfer {
  logIndex: number;
  from: string;
  to: string;
  value: string;
}

/** An ERC-20 Transfer (3 topics, value in data); null otherwise. */
export function decodeErc20Transfer(log: { topics: readonly string[]; data: string; index: number }): Erc20Transfer | null {
  if (log.topics[0] !== TOPICS.Transfer || log.topics.length !== 3) return null;
  try {
    const [value] = decodeData<[bigint]>(['uint256'], log.data);
    return { logIndex: log.index, from: topicAddress(log.topics[1]), to: topicAddress(log.topics[2]), value: value.toString() };
  } catch {
    return null;
  }
}

export function decodeAuthorizationUsed(log: { topics: readonly string[] }): { authorizer: string; nonce: string } | null {
  if (log.topics[0] !== TOPICS.AuthorizationUsed || log.topics.length !== 3) return null;
  return { authorizer: topicAddress(log.topics[1]), nonce: log.topics[2].toLowerCase() };
}
