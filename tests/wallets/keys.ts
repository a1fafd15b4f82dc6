// Random Solana addresses for tests: base58 of a fresh ed25519 public key (tweetnacl), as a wallet would show it.
import bs58 from 'bs58';
import nacl from 'tweetnacl';

export const Keypair = {
  generate(): string {
    return bs58.encode(nacl.sign.keyPair().publicKey);
  },
};
