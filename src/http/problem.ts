/** Problem types the service answers with (RFC 9457). The code is stable; clients may switch on it. */
export const PROBLEMS = {
  'invalid-input': { status: 400, title: 'The request has invalid input' },
  'malformed-request': { status: 400, title: 'The request could not be read' },
  'unsupported-media-type': { status: 400, title: 'The request body has an unsupported content type' },
  unauthorized: { status: 401, title: 'Authentication required' },
  forbidden: { status: 403, title: 'Not allowed with this token' },
  'cross-origin-write': { status: 403, title: 'Changes from another site are refused' },
  'not-found': { status: 404, title: 'Not found' },
  'method-not-allowed': { status: 405, title: 'Method not allowed' },
  'not-acceptable': { status: 406, title: 'No media type the client accepts is offered' },
  'event-id-expired': { status: 410, title: 'The changes after that event id are no longer kept' },
  'precondition-failed': { status: 412, title: 'Precondition failed' },
  'request-timeout': { status: 408, title: 'Request timeout' },
  'payload-too-large': { status: 413, title: 'The request body is too large' },
  'uri-too-long': { status: 414, title: 'The request URL is too long' },
  'expectation-failed': { status: 417, title: 'Expectation failed' },
  'idempotency-key-record-deleted': { status: 409, title: 'The record this Idempotency-Key created was deleted' },
  'range-exhausted': { status: 409, title: 'An id, change version or record version is at its end' },
  'idempotency-key-reused': { status: 422, title: 'The Idempotency-Key was used for another request' },
  'misdirected-request': { status: 421, title: 'This service does not answer to that host name' },
  'rate-limited': { status: 429, title: 'Too many requests' },
  'too-many-streams': { status: 429, title: 'This client has too many event streams open' },
  'headers-too-large': { status: 431, title: 'The request headers are too large' },
  internal: { status: 500, title: 'Internal server error' },
  unavailable: { status: 503, title: 'Service unavailable' },
  overloaded: { status: 503, title: 'The service is overloaded' },
  'too-many-listings': { status: 503, title: 'Too many listings are waiting to be read' },
  'listing-timeout': { status: 503, title: 'The listing took too long to read' },
} as const;

export type ProblemCode = keyof typeof PROBLEMS;

/** One parameter at fault, as listed in a problem's `errors`. */
export interface FieldError {
  parameter: string;
  detail: string;
}

export interface Problem {
  type: string;
  title: string;
  status: number;
  detail: string;
  errors?: FieldError[];
}

/** The one error type of the service: a problem code, a detail for the client, optional field errors. */
export class HttpError extends Error {
  readonly code: ProblemCode;
  readonly status: number;
  readonly errors: FieldError[] | undefined;
  readonly headers: Record<string, string>;

  constructor(
    code: ProblemCode,
    detail: string,
    options: { errors?: FieldError[]; headers?: Record<string, string> } = {},
  ) {
    super(detail);
    this.name = 'HttpError';
    this.code = code;
    this.status = PROBLEMS[code].status;
    this.errors = options.errors;
    this.headers = options.headers ?? {};
  }
}

/** Builds the problem-details body for a code. */
export function problem(code: ProblemCode, detail: string, errors?: FieldError[]): Problem {
  const { status, title } = PROBLEMS[code];
  const body: Problem = { type: `/problems/${code}`, title, status, detail };
  if (errors !== undefined && errors.length > 0) body.errors = errors;
  return body;
}

export function toProblem(error: HttpError): Problem {
  return problem(error.code, error.message, error.errors);
}

export const PROBLEM_CONTENT_TYPE = 'application/problem+json';

/** The problem code for a 4xx status that came from the framework rather than from our code. */
export function codeForStatus(status: number): ProblemCode {
  switch (status) {
    case 404:
      return 'not-found';
    case 405:
      return 'method-not-allowed';
    case 406:
      return 'not-acceptable';
    case 409:
      return 'idempotency-key-record-deleted';
    case 412:
      return 'precondition-failed';
    case 413:
      return 'payload-too-large';
    case 414:
      return 'uri-too-long';
    case 415:
      return 'unsupported-media-type';
    case 421:
      return 'misdirected-request';
    case 429:
      return 'rate-limited';
    case 431:
      return 'headers-too-large';
    case 503:
      return 'unavailable';
    default:
      return status >= 500 ? 'internal' : 'malformed-request';
  }
}
