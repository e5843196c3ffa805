"""Why a request was refused: one tree, each face maps it to its wire errors.

    AuthError
    ├── SigV4Error                    (SQS face; carries the AWS code and HTTP status)
    │   ├── MissingAuthenticationToken
    │   ├── IncompleteSignature
    │   ├── InvalidClientTokenId
    │   ├── SignatureDoesNotMatch
    │   └── RequestExpired
    ├── TokenRefused                  (Zaqar face, X-Auth-Token)
    │   ├── TokenInvalid
    │   ├── TokenExpired
    │   └── TokenRevoked
    ├── SignedUrlRefused              (Zaqar face, URL-Signature; Zaqar answers 404)
    └── MasterKeyError                (the server's key cannot be loaded or used)

The docstring of each class is its default message; SigV4 messages are AWS's own wording,
because SDKs and operators search for them.
"""

from __future__ import annotations


class AuthError(Exception):
    """The request could not be authenticated."""

    def __init__(self, message: str | None = None) -> None:
        super().__init__(message or (self.__doc__ or type(self).__name__).strip())

    @property
    def message(self) -> str:
        return str(self.args[0])


class SigV4Error(AuthError):
    """The request signature could not be verified."""

    code = "AccessDenied"
    status = 403


class MissingAuthenticationToken(SigV4Error):
    """Request is missing Authentication Token"""

    code = "MissingAuthenticationToken"


class IncompleteSignature(SigV4Error):
    """The request signature does not conform to AWS standards."""

    code = "IncompleteSignature"
    status = 400


class InvalidClientTokenId(SigV4Error):
    """The security token included in the request is invalid."""

    code = "InvalidClientTokenId"


class SignatureDoesNotMatch(SigV4Error):
    """The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method. Consult the service documentation for details."""  # noqa: E501

    code = "SignatureDoesNotMatch"


class RequestExpired(SigV4Error):
    """Request has expired."""

    code = "RequestExpired"


class TokenRefused(AuthError):
    """The authentication token is not valid."""

    status = 401


class TokenInvalid(TokenRefused):
    """The authentication token is malformed or was not issued by this server."""


class TokenExpired(TokenRefused):
    """The authentication token has expired."""


class TokenRevoked(TokenRefused):
    """The credential this token was issued for is revoked or no longer exists."""


class SignedUrlRefused(AuthError):
    """The signed URL is not valid for this request."""

    status = 404


class MasterKeyError(AuthError):
    """The server's master key cannot be loaded."""
