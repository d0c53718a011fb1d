"""Secrets never leave collscope: which names look secret, and how their values are hidden.

The project's rule is that secrets in the environment are never printed or bundled. This module
is the one place that knows what a secret looks like; run records (records/run.py), log import,
the HTML report and doctor (env inventory, findings, --collect bundles) all call it. Pure
functions on text; imports nothing of collscope.

What is hidden (the value becomes ``<hidden>``, the name stays so the reader knows it was set):

- ``NAME=value`` / ``NAME: value`` / ``-genv NAME value`` / ``--name value`` where NAME looks
  secret (``is_secret_name``);
- the password of a URL (``scheme://user:password@host``), whatever the variable or option
  holding it (``HTTPS_PROXY=http://u:pw@proxy``, ``git clone https://oauth2:pw@host``), and
  the user part of an http(s) URL without a password (a token used as the user name);
- ``-p VALUE`` / ``-pVALUE`` after a ``login`` subcommand (docker/podman/helm/oras login) and
  ``-pVALUE`` of mysql/mariadb clients: only there, since ``-p`` means ports, processes or
  paths to most other tools (mpirun, ssh, numactl);
- NCCL/RCCL's ``NAME set by environment to VALUE`` debug line for a secret-looking NAME.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

HIDDEN = "<hidden>"

# A name is split into words at non-alphanumerics and lower->upper case changes
# (NCCL_NET_PLUGIN_PASS -> NCCL NET PLUGIN PASS, apiKey -> API KEY). Whole words, not
# substrings, so that NCCL_IB_PKEY, TOKENIZERS_PARALLELISM, GIT_AUTHOR_NAME, NCCL_P2P_BYPASS
# and OLDPWD stay visible.
# Words that are a secret on their own, also as a word's ending (GHTOKEN, DBPASSWORD).
SECRET_WORD_ENDINGS = ("TOKEN", "TOKENS", "SECRET", "SECRETS", "PASSWORD", "PASSWD",
                       "PASSPHRASE", "CREDENTIAL", "CREDENTIALS", "APIKEY", "ACCESSKEY",
                       "PRIVATEKEY", "AUTHORIZATION")
# Whole words that make a name secret: AUTH and COOKIE alone too (an ``auth:`` or ``Cookie:``
# line holds the credential); PASS, PWD, KEY, PRIVATE and CREDS only as part of a longer name
# (DB_PASS, MYSQL_PWD, WANDB_API_KEY, SSH_PRIVATE): alone, PASS is a test outcome, PWD the
# working directory and KEY any key of a table. SESSION is not here: XDG_SESSION_ID and
# SESSION_NAME are not secrets, and AWS_SESSION_TOKEN has TOKEN.
SECRET_WORDS = frozenset({"AUTH", "COOKIE", "COOKIES"})
SECRET_WORDS_IN_NAMES = frozenset({"PASS", "PWD", "KEY", "PRIVATE", "CREDS"})
# Options named like a secret whose value is where the secret is, not the secret itself.
_NOT_A_VALUE = frozenset({"FILE", "STDIN", "PATH", "ENV"})

_WORD_BREAK = re.compile(r"[^A-Za-z0-9]+|(?<=[a-z])(?=[A-Z])")


def _name_words(name: str) -> list[str]:
    return [word.upper() for word in _WORD_BREAK.split(name) if word]


# A word of five or more letters ending in KEY is a key (TS_AUTHKEY, SSHKEY, MASTERKEY,
# SIGNINGKEY); four-letter ones are InfiniBand/RDMA identifiers, not secrets (NCCL_IB_PKEY, the
# partition key; RKEY, LKEY, QKEY, MKEY).
KEY_WORD_MIN_LEN = 5


def is_secret_name(name: str) -> bool:
    """Whether a variable or option called ``name`` holds a secret (see the word lists)."""
    words = _name_words(name)
    return any(word.endswith(SECRET_WORD_ENDINGS) or word in SECRET_WORDS
               or (word.endswith("KEY") and len(word) >= KEY_WORD_MIN_LEN)
               or (len(words) > 1 and word in SECRET_WORDS_IN_NAMES) for word in words)


# scheme://user:password@ ; the password ends at the @ (RFC 3986 percent-encodes an @ in it).
# Matches start only where a scheme can start (not inside a word), which keeps them linear.
_URL_USERINFO = re.compile(r"(?<![A-Za-z0-9+.-])([A-Za-z][A-Za-z0-9+.-]*://)([^\s/?#@:'\"]*)(:[^\s/?#@'\"]*)?@")


def _hide_url_userinfo(match: re.Match[str]) -> str:
    scheme, user, password = match.group(1), match.group(2), match.group(3)
    if password is not None:
        return f"{scheme}{user}:{HIDDEN}@"
    if user and scheme.lower() in ("http://", "https://"):
        return f"{scheme}{HIDDEN}@"              # https://<token>@github.com
    return match.group(0)                        # ssh://git@host: a user name only


# ``NAME=value`` / ``NAME: value`` (a tool echoing its config). The name may be quoted and
# closed before the separator ("HF_TOKEN": "..." in JSON). A name starts after no name character
# (leading dashes of an option skipped: --auth-key=): tried once per word, not at every letter.
_NAME_SEP = re.compile(r"(?<![A-Za-z0-9_.-])-*([A-Za-z_][A-Za-z0-9_.-]*)([\"']?)[ \t]*[=:][ \t]*")
# An authorization scheme word is not the secret: the credential after it is.
_SCHEMES = ("bearer", "basic", "token", "digest")
_NEXT_WORD = re.compile(r"[ \t]+[^\s,;'\"]+")
# Quoted values whole: NAME="a b", and 'NAME=a b' (the whole word quoted) up to its quote.
_VALUE = {"": re.compile(r"\"[^\"\n]*\"?|'[^'\n]*'?|[^\s,;'\"]+"),
          '"': re.compile(r'[^"\n]+'), "'": re.compile(r"[^'\n]+")}
# NCCL/RCCL at NCCL_DEBUG=INFO: "NCCL_X set by environment to VALUE." (and "NCCL_X set to").
# The value runs to the end of the line (it may hold spaces) or a quote around the line.
_SET_BY_ENV = re.compile(
    r"\b([A-Za-z_][A-Za-z0-9_]*) set (?:by environment )?to [^\s'\"]+(?:[ \t]+[^\s'\"]+)*")
# One shell word of a line (quoted parts kept with it).
_SHELL_WORD = re.compile(r"(?:[^\s'\"]|'[^'\n]*'?|\"[^\"\n]*\"?)+")


def _hide_named_values(text: str) -> str:
    kept, pos = [], 0
    for match in _NAME_SEP.finditer(text):
        if match.start() < pos or not is_secret_name(match.group(1)):
            continue                             # before the value: a:a:a... stays linear
        quote = "" if match.group(2) else text[match.start() - 1:match.start()]
        value = _VALUE.get(quote, _VALUE[""]).match(text, match.end())
        if value is None:
            continue
        end = value.end()
        if value.group(0).lower() in _SCHEMES and (credential := _NEXT_WORD.match(text, end)):
            end = credential.end()
        kept += [text[pos:match.end()], HIDDEN]
        pos = end
    return "".join(kept) + text[pos:]


def _hide_set_by_env(match: re.Match[str]) -> str:
    if not is_secret_name(match.group(1)):
        return match.group(0)
    head = match.group(0)
    return head[:head.index(" to ") + 4] + HIDDEN


def _secret_words(words: Sequence[str]) -> dict[int, int]:
    """Which words of one command hold a secret given by position (not by ``NAME=``):
    word index -> how many leading characters stay (``-p<hidden>`` keeps 2)."""
    hidden: dict[int, int] = {}
    after_login = mysql = False
    for i, word in enumerate(words):
        following = words[i + 1] if i + 1 < len(words) else None
        name = word.lstrip("-")
        if word in ("-genv", "-env") and following is not None and i + 2 < len(words) \
                and is_secret_name(following):
            hidden[i + 2] = 0                    # MPI: -genv NAME value
        elif word.startswith("-") and "=" not in word and following is not None \
                and not following.startswith("-") and is_secret_name(name) \
                and _name_words(name)[-1] not in _NOT_A_VALUE:
            hidden[i + 1] = 0                    # --token abc, --api-key abc
        elif after_login and word == "-p" and following is not None:
            hidden[i + 1] = 0                    # docker login -p abc
        elif (after_login or mysql) and word.startswith("-p") and len(word) > 2:
            hidden[i] = 3 if word.startswith("-p=") else 2     # -pabc
        if word in (";", "&&", "||", "|"):     # the next command of the line
            after_login = mysql = False
        after_login = after_login or word == "login"
        mysql = mysql or word.rsplit("/", 1)[-1].startswith(("mysql", "mariadb"))
    return hidden


def _hide_positional(line: str) -> str:
    spans = list(_SHELL_WORD.finditer(line))
    hidden = _secret_words([span.group(0).replace("'", "").replace('"', "") for span in spans])
    for i in sorted(hidden, reverse=True):       # from the end: earlier offsets stay valid
        start, end = spans[i].start() + hidden[i], spans[i].end()
        line = line[:start] + HIDDEN + line[end:]
    return line


def redact_secrets(text: str) -> str:
    """``text`` with every secret value it shows replaced by ``<hidden>`` (see the module
    docstring): log lines, command lines, tool messages, findings."""
    text = _URL_USERINFO.sub(_hide_url_userinfo, text)
    text = _SET_BY_ENV.sub(_hide_set_by_env, text)
    text = "\n".join(_hide_positional(line) for line in text.split("\n"))
    return _hide_named_values(text)


def redact_argv(argv: Sequence[str]) -> list[str]:
    """A captured command's words with secret values hidden, as ``redact_secrets`` does to
    its text."""
    words = [f"{name}={HIDDEN}" if sep and is_secret_name(name) else redact_secrets(word)
             for word, (name, sep, _) in ((word, word.partition("=")) for word in argv)]
    for i, keep in _secret_words(words).items():
        words[i] = words[i][:keep] + HIDDEN
    return words


def shown_env(environ: Mapping[str, str]) -> dict[str, str]:
    """Environment variables fit to print or bundle: secret-looking names left out, secrets
    inside the other values (a proxy URL's password) hidden."""
    return {name: redact_secrets(value) for name, value in environ.items()
            if not is_secret_name(name)}
