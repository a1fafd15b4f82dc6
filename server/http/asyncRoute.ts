// Express 5 forwards rejected promises to the error handler; this helper only gives handlers a typed shape.
import type { NextFunction, Request, RequestHandler, Response } from 'express';

export function route(handler: (req: Request, res: Response, next: NextFunction) => Promise<unknown>): RequestHandler {
  return (req, res, next) => handler(req, res, next).catch(next);
}
