// Network stand-ins for dependency-failure tests: a server that accepts connections and never answers (a
// hung Postgres or Redis), a TCP proxy that can be cut and restored (an outage and its end) or hung and
// resumed (a server that stops answering while connections stay open), a free port.
import net from 'node:net';

export interface Closable {
  port: number;
  close(): Promise<void>;
}

/** Accepts TCP connections, reads whatever arrives and never writes a byte back. */
export async function hungServer(): Promise<Closable> {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.on('data', () => undefined);
    socket.on('error', () => undefined);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as net.AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

/** A port nothing listens on (connection refused: a dead dependency). */
export async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

export interface TcpProxy extends Closable {
  /** Drops every connection and stops listening (the dependency "goes away"). */
  cut(): Promise<void>;
  /** Listens again on the same port (the dependency "comes back"). */
  restore(): Promise<void>;
  /** Stops forwarding in both directions; connections stay open and new ones are accepted (a hung server). */
  hang(): void;
  /** Forwards again everything held back while hung. */
  resume(): void;
}

export async function tcpProxy(targetPort: number, targetHost = '127.0.0.1'): Promise<TcpProxy> {
  const sockets = new Set<net.Socket>();
  const pairs = new Set<[net.Socket, net.Socket]>();
  let server: net.Server | null = null;
  let port = 0;
  let hung = false;
  const flow = (client: net.Socket, upstream: net.Socket, on: boolean) => {
    if (on) {
      client.pipe(upstream);
      upstream.pipe(client);
    } else {
      client.unpipe(upstream);
      upstream.unpipe(client);
      client.pause();
      upstream.pause();
    }
  };
  const listen = async () => {
    server = net.createServer((client) => {
      const upstream = net.connect(targetPort, targetHost);
      const pair: [net.Socket, net.Socket] = [client, upstream];
      pairs.add(pair);
      for (const s of [client, upstream]) {
        sockets.add(s);
        s.on('error', () => undefined);
        s.on('close', () => {
          sockets.delete(s);
          pairs.delete(pair);
          client.destroy();
          upstream.destroy();
        });
      }
      flow(client, upstream, !hung);
    });
    await new Promise<void>((resolve) => server!.listen(port, '127.0.0.1', resolve));
    port = (server.address() as net.AddressInfo).port;
  };
  const cut = () =>
    new Promise<void>((resolve) => {
      for (const s of sockets) s.destroy();
      if (!server) return resolve();
      server.close(() => resolve());
      server = null;
    });
  await listen();
  return {
    get port() {
      return port;
    },
    cut,
    restore: listen,
    close: cut,
    hang: () => {
      hung = true;
      for (const [client, upstream] of pairs) flow(client, upstream, false);
    },
    resume: () => {
      hung = false;
      for (const [client, upstream] of pairs) flow(client, upstream, true);
    },
  };
}
