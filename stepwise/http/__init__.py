"""What both HTTP APIs share (`stepwise serve` and the services' control plane).

The JSON error envelope with its stable codes (`stepwise.http.errors`), and the token gate,
Host/Origin checks, body and header limits and the exposure check (`stepwise.http.security`).
"""
