"""The least Django settings under which Open edX's LTI 1.3 consumer (`lti_consumer`, package
lti-consumer-xblock) imports and runs outside Open edX: the apps its models and serializers name, an
in-memory database that is never migrated (nothing here saves a model), a process-local cache for the
launch data that its `prepare_preflight_url` stores and its `generate_launch_request` reads back (the
`lti_message_hint`), and the platform name its launch claims carry. Used only by openedx_platform.py, under
the separate .lms-venv (scripts/install.sh)."""

SECRET_KEY = "openedx-platform-test-only"
DEBUG = False
USE_TZ = True
INSTALLED_APPS = [
    "django.contrib.contenttypes",
    "django.contrib.auth",
    "rest_framework",
    "config_models",
    "lti_consumer",
]
DATABASES = {"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": ":memory:"}}
CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
PLATFORM_NAME = "Open edX (titangrade test)"
USAGE_ID_PATTERN = r"(?P<usage_id>(?:i4x://?[^/]+/[^/]+/[^/]+/[^@]+(?:@[^/]+)?)|(?:[^/]+))"
LOGGING_CONFIG = None
