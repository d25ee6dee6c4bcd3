# Varnish 7 in front of Vitrine, kept exact by the service's purges (C51, docs/edge.md).
# Needs vmod_xkey (Debian: apt-get install varnish varnish-modules). Run it with the
# service's PURGE_URLS naming this Varnish, e.g. PURGE_URLS=http://127.0.0.1:6081/
# and a long CACHE_MAX_AGE (3600, 86400): every write of every writer purges the
# answers it alters.
vcl 4.1;

import xkey;

# The service. Edit host and port to where Vitrine listens.
backend vitrine {
  .host = "127.0.0.1";
  .port = "3000";
  .connect_timeout = 2s;
  .first_byte_timeout = 30s;
}

# Who may purge: the service's instances. Add their addresses when they run elsewhere.
acl purgers {
  "localhost";
  "127.0.0.1";
  "::1";
}

sub vcl_recv {
  if (req.method == "PURGE") {
    if (client.ip !~ purgers) {
      return (synth(403, "Forbidden"));
    }
    if (!req.http.xkey) {
      return (synth(400, "PURGE needs an xkey header"));
    }
    # The keys are the service's Surrogate-Key tags, space-separated.
    set req.http.x-purged = xkey.purge(req.http.xkey);
    return (synth(200, "Purged " + req.http.x-purged));
  }
  # The API is public and read-only: a cookie or an Authorization header changes nothing
  # of its answers, and must not make every request reach the service.
  if (req.method == "GET" || req.method == "HEAD") {
    unset req.http.cookie;
    unset req.http.authorization;
  }
  # Everything else (OPTIONS preflights, other methods) follows the built-in VCL.
}

sub vcl_backend_response {
  # vmod_xkey indexes the `xkey` response header: the service names its keys in Surrogate-Key (C34).
  if (beresp.http.Surrogate-Key) {
    set beresp.http.xkey = beresp.http.Surrogate-Key;
  }
  # The service's Cache-Control decides the TTL (the built-in VCL reads max-age; `no-cache`
  # and `no-store` are not kept). No grace: an answer past its max-age (capped at the next
  # go-live, C33) is never served while it is fetched again.
  set beresp.grace = 0s;
}

sub vcl_deliver {
  # The index is Varnish's own business; clients keep Surrogate-Key (C34).
  unset resp.http.xkey;
}
