// Off-chain evidence behind an agent's registration: whether its website answers and mentions MCP or x402,
// whether its A2A endpoint serves an agent card, and its GitHub repository's stars. Every fetch goes through
// the SafeHttpFetcher; a failure yields null/false for that fact, never an exception.
import type { HttpFetcher } from './safeFetch';
import type { RegistrationInfo } from './registration';

export interface AgentEvidence {
  has_a2a_agent_card: boolean;
  website_reachable: boolean | null;
  website_mentions_mcp: boolean | null;
  website_mentions_x402: boolean | null;
  github_stars: number | null;
}

export const GITHUB_API_BASE = 'https://api.github.com';
const PAGE_MAX_BYTES = 512 * 1024;

export class EvidenceCollector {
  constructor(
    private readonly fetcher: HttpFetcher,
    private readonly githubApiBase = GITHUB_API_BASE,
  ) {}

  async collect(info: RegistrationInfo): Promise<AgentEvidence> {
    const [website, card, stars] = await Promise.all([
      info.website_url ? this.website(info.website_url) : Promise.resolve(null),
      info.a2a_endpoint ? this.agentCard(info.a2a_endpoint) : Promise.resolve(false),
      info.github_url ? this.githubStars(info.github_url) : Promise.resolve(null),
    ]);
    return {
      has_a2a_agent_card: card,
      website_reachable: website ? website.reachable : null,
      website_mentions_mcp: website ? website.mcp : null,
      website_mentions_x402: website ? website.x402 : null,
      github_stars: stars,
    };
  }

  private async website(url: string): Promise<{ reachable: boolean; mcp: boolean | null; x402: boolean | null }> {
    try {
      const res = await this.fetcher.fetch(url, { maxBytes: PAGE_MAX_BYTES, headers: { accept: 'text/html,*/*' } });
      if (res.status < 200 || res.status >= 300) return { reachable: false, mcp: null, x402: null };
      const text = res.body.toString('utf8');
      return { reachable: true, mcp: /\bMCP\b|model context protocol/i.test(text), x402: /\bx402\b/i.test(text) };
    } catch {
      return { reachable: false, mcp: null, x402: null };
    }
  }

  /** An A2A agent card is a JSON object with at least a name and a url or skills. */
  private async agentCard(url: string): Promise<boolean> {
    try {
      const res = await this.fetcher.fetch(url, { headers: { accept: 'application/json' } });
      if (res.status < 200 || res.status >= 300) return false;
      const card = JSON.parse(res.body.toString('utf8')) as Record<string, unknown>;
      return Boolean(card && typeof card === 'object' && typeof card.name === 'string' && (typeof card.url === 'string' || Array.isArray(card.skills)));
    } catch {
      return false;
    }
  }

  private async githubStars(url: string): Promise<number | null> {
    const match = /^https?:\/\/(?:www\.)?github\.com\/([A-Za-z0-9-]+)\/([A-Za-z0-9._-]+)/.exec(url);
    if (!match) return null;
    const repo = match[2].replace(/\.git$/, '');
    try {
      const res = await this.fetcher.fetch(`${this.githubApiBase}/repos/${match[1]}/${repo}`, { headers: { accept: 'application/vnd.github+json' } });
      if (res.status !== 200) return null;
      const body = JSON.parse(res.body.toString('utf8')) as { stargazers_count?: unknown };
      return typeof body.stargazers_count === 'number' && body.stargazers_count >= 0 ? body.stargazers_count : null;
    } catch {
      return null;
    }
  }
}
