"""aws_endpoints.py: the AWS credential endpoints of the tests, on 127.0.0.1, answering as AWS documents them: STS (AssumeRole signed with Signature Version 4 for service "sts", AssumeRoleWithWebIdentity unsigned; the Query API over a POSTed form, XML answers, ErrorResponse errors), a container credentials endpoint (ECS, EKS Pod Identity: a GET with an Authorization token, a JSON answer), and the EC2 instance metadata service in its IMDSv2-only mode (a session token from PUT /latest/api/token, 401 without it).

Each server issues temporary credentials through an Issuer, which tells the
VerifyingProxy (s3fixture.py) in front of the S3 server to accept them until
their expiry.  Every server records what it was asked in .calls (a list of
Call) and stops with close().

  issuer = Issuer(proxy, lifetime=3600)   credentials valid `lifetime` s;
          .issue() -> Credentials (.key_id, .secret, .token, .expiration
          (ISO 8601), .expiry (time.time() seconds)); .issued: all of them
  StsServer(issuer, users={key id: secret}, roles={arn: external id or None},
            web_tokens={token}, region='us-east-1')   .url
  ContainerServer(issuer, token)      .url (the full URI, /v2/credentials)
  ImdsServer(issuer, role='reader')   .url (the endpoint, no trailing /)
"""
import datetime
import hashlib
import hmac
import http.server
import json
import re
import secrets
import threading
import time
import urllib.parse
import uuid

from s3fixture import canonical_query, signature

STS_NS = 'https://sts.amazonaws.com/doc/2011-06-15/'
ACCOUNT = '123456789012'


def iso(t):
    """time.time() seconds as AWS writes times: 2019-11-09T13:34:41Z."""
    return datetime.datetime.fromtimestamp(int(t), datetime.timezone.utc).strftime(
        '%Y-%m-%dT%H:%M:%SZ')


class Credentials:
    def __init__(self, key_id, secret, token, expiry):
        self.key_id, self.secret, self.token, self.expiry = key_id, secret, token, expiry
        self.expiration = iso(expiry)

    def __repr__(self):
        return f'Credentials({self.key_id}, until {self.expiration})'


class Issuer:
    """Makes temporary credentials valid `lifetime` seconds (to whole
    seconds, as AWS states an Expiration) and registers each with the
    proxy."""

    def __init__(self, proxy, lifetime=3600):
        self.proxy = proxy
        self.lifetime = lifetime
        self.issued = []
        self.lock = threading.Lock()

    def issue(self, lifetime=None):
        expiry = int(time.time() + (lifetime or self.lifetime))
        c = Credentials('ASIA' + secrets.token_hex(8).upper(), secrets.token_urlsafe(30),
                        secrets.token_urlsafe(120), expiry)
        with self.lock:
            self.issued.append(c)
        if self.proxy is not None:
            with self.proxy.lock:
                self.proxy.temporary[c.key_id] = (c.secret, c.token, c.expiry)
        return c

    def ids(self):
        with self.lock:
            return [c.key_id for c in self.issued]


class Call:
    """One request a server was asked: method, path, query (a dict),
    headers (an http.client message), form (a dict, POST bodies), when."""

    def __init__(self, method, path, query, headers, form):
        self.method, self.path, self.query, self.headers, self.form = \
            method, path, query, headers, form
        self.when = time.time()

    def __repr__(self):
        return f'Call({self.method} {self.path} {self.form.get("Action", "")})'


class Server:
    """A threading HTTP server on 127.0.0.1 whose answer() a subclass
    writes: (status, [(header, value)], body bytes)."""

    def __init__(self):
        self.calls = []
        self.lock = threading.Lock()
        self.server = http.server.ThreadingHTTPServer(('127.0.0.1', 0), self._handler())
        self.port = self.server.server_address[1]
        self.base = f'http://127.0.0.1:{self.port}'
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def _handler(self):
        srv = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = 'HTTP/1.1'

            def log_message(self, *args):
                pass

            def _any(self):
                n = int(self.headers.get('Content-Length') or 0)
                body = self.rfile.read(n) if n else b''
                path, _, query = self.path.partition('?')
                form = {}
                if self.command == 'POST':
                    form = dict(urllib.parse.parse_qsl(body.decode(), keep_blank_values=True))
                call = Call(self.command, path, dict(urllib.parse.parse_qsl(query)),
                            self.headers, form)
                with srv.lock:
                    srv.calls.append(call)
                status, headers, out = srv.answer(call, body)
                self.send_response(status)
                for k, v in headers:
                    self.send_header(k, v)
                self.send_header('Content-Length', str(len(out)))
                self.end_headers()
                self.wfile.write(out)

            do_GET = do_PUT = do_POST = do_DELETE = _any
        return Handler

    def answer(self, call, body):
        raise NotImplementedError

    def asked(self):
        with self.lock:
            return list(self.calls)

    def close(self):
        self.server.shutdown()
        self.server.server_close()


# --------------------------------------------------------------------- STS

class StsServer(Server):
    """STS's Query API at .url: AssumeRole (Signature Version 4, service
    sts, checked against `users` and the credentials it issued itself, with
    their X-Amz-Security-Token) and AssumeRoleWithWebIdentity (unsigned, the
    token one of `web_tokens`).  A role of `roles` may require an
    ExternalId.  .checked counts the signatures checked."""

    def __init__(self, issuer, users=None, roles=None, web_tokens=(), region='us-east-1'):
        self.issuer = issuer
        self.users = dict(users or {})
        self.roles = dict(roles or {})
        self.web_tokens = set(web_tokens)
        self.region = region
        self.checked = 0
        super().__init__()
        self.url = self.base

    @staticmethod
    def error(status, code, message, kind='Sender'):
        out = (f'<ErrorResponse xmlns="{STS_NS}"><Error><Type>{kind}</Type><Code>{code}</Code>'
               f'<Message>{message}</Message></Error>'
               f'<RequestId>{uuid.uuid4()}</RequestId></ErrorResponse>').encode()
        return status, [('Content-Type', 'text/xml')], out

    def signer(self, call, body):
        """The key id whose signature of the request is good, or the
        refusal (status, code, message)."""
        h = call.headers
        m = re.fullmatch(r'AWS4-HMAC-SHA256 Credential=([^/]+)/(\d{8})/([^/]+)/sts/aws4_request, '
                         r'SignedHeaders=([a-z0-9;-]+), Signature=([0-9a-f]{64})',
                         h.get('Authorization', ''))
        if not m:
            return None, (403, 'MissingAuthenticationToken',
                          'Request is missing Authentication Token')
        key_id, day, region, signed, sig = m.groups()
        secret = self.users.get(key_id)
        names = signed.split(';')
        if secret is None:
            for c in self.issuer.issued:
                if c.key_id == key_id:
                    if h.get('X-Amz-Security-Token') != c.token or \
                            'x-amz-security-token' not in names:
                        return None, (403, 'InvalidClientTokenId',
                                      'The security token included in the request is invalid.')
                    if time.time() >= c.expiry:
                        return None, (400, 'ExpiredToken',
                                      'The security token included in the request is expired')
                    secret = c.secret
        if secret is None:
            return None, (403, 'InvalidClientTokenId',
                          'The security token included in the request is invalid.')
        date = h.get('X-Amz-Date', '')
        if region != self.region or not date.startswith(day) or \
                not {'host', 'x-amz-date'} <= set(names) or names != sorted(names):
            return None, (403, 'SignatureDoesNotMatch', 'checked by the test STS')
        want = signature(secret, region, date, call.method, call.path,
                         canonical_query(urllib.parse.urlencode(call.query)),
                         {n: h.get(n, '') for n in names}, hashlib.sha256(body).hexdigest(),
                         service='sts')
        with self.lock:
            self.checked += 1
        if not hmac.compare_digest(sig, want):
            return None, (403, 'SignatureDoesNotMatch',
                          'The request signature we calculated does not match the signature '
                          'you provided.')
        return key_id, None

    def answer(self, call, body):
        f = call.form
        if call.method != 'POST' or call.path != '/':
            return self.error(400, 'InvalidAction', 'Could not find operation')
        action = f.get('Action')
        if f.get('Version') != '2011-06-15':
            return self.error(400, 'InvalidAction', 'Version 2011-06-15 only')
        arn, session = f.get('RoleArn', ''), f.get('RoleSessionName', '')
        if not re.fullmatch(r'[\w+=,.@-]{2,64}', session):
            return self.error(400, 'ValidationError', 'RoleSessionName: 2 to 64 of [\\w+=,.@-]')
        if 'DurationSeconds' in f and not 900 <= int(f['DurationSeconds']) <= 43200:
            return self.error(400, 'ValidationError', 'DurationSeconds: 900 to 43200')
        if action == 'AssumeRole':
            _, refused = self.signer(call, body)
            if refused:
                return self.error(*refused)
            if arn not in self.roles or self.roles[arn] != f.get('ExternalId'):
                return self.error(403, 'AccessDenied', f'Not authorized to perform '
                                  f'sts:AssumeRole on resource: {arn}')
        elif action == 'AssumeRoleWithWebIdentity':
            if f.get('WebIdentityToken') not in self.web_tokens:
                return self.error(400, 'InvalidIdentityToken',
                                  "Couldn't retrieve verification key from your identity provider")
            if arn not in self.roles:
                return self.error(403, 'AccessDenied', 'Not authorized to perform '
                                  'sts:AssumeRoleWithWebIdentity')
        else:
            return self.error(400, 'InvalidAction', f'Could not find operation {action}')
        c = self.issuer.issue()
        role = arn.rsplit('/', 1)[-1]
        web = action == 'AssumeRoleWithWebIdentity'
        extra = ('<SubjectFromWebIdentityToken>system:serviceaccount:test:reader'
                 '</SubjectFromWebIdentityToken><Audience>sts.amazonaws.com</Audience>'
                 '<Provider>oidc.test</Provider>') if web else ''
        out = (f'<{action}Response xmlns="{STS_NS}"><{action}Result>{extra}'
               f'<AssumedRoleUser><Arn>arn:aws:sts::{ACCOUNT}:assumed-role/{role}/{session}</Arn>'
               f'<AssumedRoleId>AROA3XFRBF535EXAMPLE:{session}</AssumedRoleId></AssumedRoleUser>'
               f'<Credentials><AccessKeyId>{c.key_id}</AccessKeyId>'
               f'<SecretAccessKey>{c.secret}</SecretAccessKey>'
               f'<SessionToken>{c.token}</SessionToken>'
               f'<Expiration>{c.expiration}</Expiration></Credentials>'
               f'<PackedPolicySize>6</PackedPolicySize></{action}Result>'
               f'<ResponseMetadata><RequestId>{uuid.uuid4()}</RequestId></ResponseMetadata>'
               f'</{action}Response>').encode()
        return 200, [('Content-Type', 'text/xml')], out


# ------------------------------------------------------------- container

class ContainerServer(Server):
    """A container credentials endpoint (ECS task role, EKS Pod Identity)
    at .url: a GET carrying Authorization `token` is answered the JSON of
    fresh credentials; without it, or with another, 401."""

    PATH = '/v2/credentials/5f7b1c2e'

    def __init__(self, issuer, token):
        self.issuer = issuer
        self.token = token
        super().__init__()
        self.url = self.base + self.PATH

    def answer(self, call, body):
        if call.method != 'GET' or call.path != self.PATH:
            return 404, [], b'404 page not found\n'
        if call.headers.get('Authorization') != self.token:
            out = json.dumps({'code': 'AccessDeniedException',
                              'message': 'invalid authorization token'}).encode()
            return 401, [('Content-Type', 'application/json')], out
        c = self.issuer.issue()
        out = json.dumps({'AccessKeyId': c.key_id, 'SecretAccessKey': c.secret,
                          'Token': c.token, 'Expiration': c.expiration,
                          'RoleArn': f'arn:aws:iam::{ACCOUNT}:role/reader'}).encode()
        return 200, [('Content-Type', 'application/json')], out


# ------------------------------------------------------------------ IMDS

class ImdsServer(Server):
    """The EC2 instance metadata service with IMDSv2 required: PUT
    /latest/api/token with X-aws-ec2-metadata-token-ttl-seconds (1 to
    21600) gives a session token (403 when the PUT carries
    X-Forwarded-For); every GET without a valid X-aws-ec2-metadata-token
    is answered 401.  /latest/meta-data/iam/security-credentials/ lists the
    role, .../ROLE its credentials."""

    CREDS = '/latest/meta-data/iam/security-credentials/'

    def __init__(self, issuer, role='reader'):
        self.issuer = issuer
        self.role = role
        self.tokens = {}        # token -> expiry
        super().__init__()
        self.url = self.base

    def answer(self, call, body):
        h = call.headers
        if call.method == 'PUT' and call.path == '/latest/api/token':
            if h.get('X-Forwarded-For'):
                return 403, [], b''
            ttl = h.get('X-aws-ec2-metadata-token-ttl-seconds', '')
            if not ttl.isdigit() or not 1 <= int(ttl) <= 21600:
                return 400, [], b''
            token = secrets.token_urlsafe(40)
            with self.lock:
                self.tokens[token] = time.time() + int(ttl)
            return 200, [('X-aws-ec2-metadata-token-ttl-seconds', ttl),
                         ('Content-Type', 'text/plain')], token.encode()
        if call.method != 'GET':
            return 405, [], b''
        with self.lock:
            expiry = self.tokens.get(h.get('X-aws-ec2-metadata-token', ''), 0)
        if time.time() >= expiry:
            return 401, [], b''
        if call.path == self.CREDS:
            return 200, [('Content-Type', 'text/plain')], self.role.encode()
        if call.path == self.CREDS + self.role:
            c = self.issuer.issue()
            out = json.dumps({'Code': 'Success', 'LastUpdated': iso(time.time()),
                              'Type': 'AWS-HMAC', 'AccessKeyId': c.key_id,
                              'SecretAccessKey': c.secret, 'Token': c.token,
                              'Expiration': c.expiration}, indent=2).encode()
            return 200, [('Content-Type', 'text/plain')], out
        return 404, [], b''
