"""Network confinement: the policy's rules and decisions (``rules``), the proxy pi runs for a
session outside the sandbox (``proxy``) and the bridge that makes it reachable inside one
(``bridge``)."""
