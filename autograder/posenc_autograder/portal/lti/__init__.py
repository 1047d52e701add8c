"""The portal as an LTI 1.3 Advantage tool: an LMS (Canvas, Moodle, ...) signs its users in (`launch.py`), an
instructor picks an assignment for a link (Deep Linking), the class list comes from the LMS (`roster.py`, Names and
Role Provisioning) and scores go back to its gradebook (`passback.py`, Assignment and Grade Services).

pylti1p3 does the protocol's parts (the registration file, the OIDC login redirect, service tokens, deep-linking
JWTs); `adapter.py` fits it to Starlette and adds the checks the library leaves out. The platforms
the tool trusts are in autograder/lti.json (`registration.py`, written by `make lti-register`).
"""
