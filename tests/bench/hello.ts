// The baseline for bench:assess: a plain Express hello-world JSON route (no middleware).
import express from 'express';

const app = express();
app.get('/hello', (_req, res) => {
  res.json({ hello: 'world' });
});
app.get('/healthz', (_req, res) => {
  res.json({ status: 'ok' });
});
app.listen(Number(process.env.PORT ?? 3312), '127.0.0.1');
