// The app's only way to the server: named operations over HTTP, and subscriptions over one
// graphql-transport-ws socket each that reconnect and resume from the last event's cursor.

const TOKEN_KEY = "parley-token";

export const token = {
  get: () => sessionStorage.getItem(TOKEN_KEY),
  set: (value) => sessionStorage.setItem(TOKEN_KEY, value),
  clear: () => sessionStorage.removeItem(TOKEN_KEY),
};

export class ApiError extends Error {
  /**
   * kind: "auth" (a token is missing or refused), "seat" (the seat token the tab sent instead is
   * not a seat's), "rater" (likewise a rater's), "unavailable", "graphql" or "network".
   */
  constructor(message, kind, code = null) {
    super(message);
    this.kind = kind;
    this.code = code; // the first error's extensions.code, for a "graphql" error
  }
}

export const TOKEN_REFUSED =
  "The server refused the token: it needs one of the tokens it was started with (PARLEY_TOKENS).";

const RETRY_MS = [250, 500, 1000, 2000, 4000];

export class Api {
  constructor(operations, endpoint, tokensRequired = false) {
    this.operations = operations;
    this.endpoint = endpoint;
    this.tokensRequired = tokensRequired; // the server said (in its page) that it has tokens
    this.onAuthError = () => {};
    this.seatToken = null; // on a seat's page: sent when there is no API token (a participant's)
    this.raterToken = null; // on a rater's page: likewise
  }

  /** Whether requests beyond a seat's own may be sent: the server is open, or a token is held. */
  mayRead() {
    return !this.tokensRequired || Boolean(token.get());
  }

  document(name) {
    const operation = this.operations.get(name);
    if (!operation) throw new Error(`no operation named ${name} in operations.graphql`);
    return operation.document;
  }

  headers() {
    const headers = { "content-type": "application/json", accept: "application/json" };
    const value = token.get();
    if (value) headers.authorization = "Bearer " + value;
    else if (this.seatToken) headers.authorization = "Seat " + this.seatToken;
    else if (this.raterToken) headers.authorization = "Rater " + this.raterToken;
    return headers;
  }

  connectionParams() {
    const value = token.get();
    if (value) return { authorization: "Bearer " + value };
    if (this.seatToken) return { seatToken: this.seatToken };
    return this.raterToken ? { raterToken: this.raterToken } : {};
  }

  /** Run a query or mutation; its data, or an ApiError. */
  async request(name, variables = {}) {
    let response;
    try {
      response = await fetch(this.endpoint, {
        method: "POST",
        headers: this.headers(),
        body: JSON.stringify({ query: this.document(name), variables, operationName: name }),
      });
    } catch (error) {
      throw new ApiError(`The server did not answer (${error.message}).`, "network");
    }
    if (response.status === 401 && !token.get() && this.seatToken) {
      throw new ApiError("The server does not know this seat token.", "seat"); // the seat page says so
    }
    if (response.status === 401 && !token.get() && this.raterToken) {
      throw new ApiError("The server does not know this rater token.", "rater"); // the rating page says so
    }
    if (response.status === 401) {
      const error = new ApiError(token.get() ? TOKEN_REFUSED : "This server needs a token.", "auth");
      error.refused = Boolean(token.get());
      this.onAuthError(error);
      throw error;
    }
    let body;
    try {
      body = await response.json();
    } catch {
      throw new ApiError(`The server answered HTTP ${response.status} without JSON.`, "network");
    }
    if (body.errors && body.errors.length) {
      const unavailable = body.errors.some((e) => e.extensions && e.extensions.code === "UNAVAILABLE");
      const message = body.errors.map((e) => e.message).join("; ");
      const code = (body.errors[0].extensions && body.errors[0].extensions.code) || null;
      throw new ApiError(message, unavailable ? "unavailable" : "graphql", code);
    }
    return body.data;
  }

  /**
   * Follow a subscription. handlers: event(event), state("connecting" | "live" |
   * "reconnecting" | "ended"), failed(ApiError), done(). A dropped socket is reopened and the
   * subscription resumed with `after:` the cursor of the last event seen, so the server sends
   * exactly what was missed. Returns a function that stops it.
   */
  follow(name, variables, handlers) {
    const url = new URL(this.endpoint, document.baseURI);
    url.protocol = url.protocol === "https:" ? "wss:" : "ws:";
    let cursor = null;
    let client = null;
    let stopped = false;
    let failures = 0;
    let timer = null;
    const state = handlers.state || (() => {});

    const finish = () => {
      if (client) client.dispose();
      client = null;
    };

    const connect = () => {
      if (stopped) return;
      state(cursor === null ? "connecting" : "reconnecting");
      client = graphqlWs.createClient({
        url: url.href,
        connectionParams: () => this.connectionParams(),
        retryAttempts: 0,
        lazy: true,
        on: { connected: () => state("live") },
      });
      const resumed = cursor === null ? variables : { ...variables, after: cursor };
      client.subscribe(
        { query: this.document(name), variables: resumed, operationName: name },
        {
          next: (result) => {
            if (result.errors && result.errors.length) {
              stopped = true;
              handlers.failed(new ApiError(result.errors.map((e) => e.message).join("; "), "graphql"));
              return;
            }
            const event = Object.values(result.data)[0];
            cursor = event.cursor;
            failures = 0;
            handlers.event(event);
          },
          error: (error) => {
            finish();
            if (stopped) return;
            if (error && error.code === 4403) {
              stopped = true;
              const refused = new ApiError(TOKEN_REFUSED, "auth");
              refused.refused = true;
              this.onAuthError(refused);
              handlers.failed(refused);
            } else if (error && error.code >= 4400 && error.code < 4500) {
              stopped = true;
              handlers.failed(new ApiError(`The server closed the stream (${error.code} ${error.reason}).`, "graphql"));
            } else if (Array.isArray(error)) {
              stopped = true;
              handlers.failed(new ApiError(error.map((e) => e.message).join("; "), "graphql"));
            } else {
              state("reconnecting");
              const delay = RETRY_MS[Math.min(failures, RETRY_MS.length - 1)];
              failures += 1;
              timer = setTimeout(connect, delay);
            }
          },
          complete: () => {
            finish();
            if (stopped) return;
            stopped = true;
            state("ended");
            if (handlers.done) handlers.done();
          },
        },
      );
    };

    connect();
    return () => {
      stopped = true;
      clearTimeout(timer);
      finish();
    };
  }
}
