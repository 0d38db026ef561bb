"""Every table, imported in one place so Alembic and the tests see the whole schema."""

from service.auth.models import Identity, Membership, Token  # noqa: F401
from service.courses.models import CourseSettings  # noqa: F401
from service.courses.schedule_models import ExerciseSchedule, Extension  # noqa: F401
from service.db import Base  # noqa: F401
from service.grades.models import ScoreOverride  # noqa: F401
from service.intake.models import IntakeIntegration  # noqa: F401
from service.lti.models import LtiContext, LtiLineItem, LtiLoginState, LtiPlatform  # noqa: F401
from service.outbox.models import DeliveryAttempt, OutboxDelivery, OutboxEvent  # noqa: F401
from service.queue.models import Job, WorkerBeat  # noqa: F401
from service.requests.models import SubmissionRequest  # noqa: F401
from service.submissions.models import ProgressEvent, Submission  # noqa: F401
from service.web.models import RevokedWebSession  # noqa: F401
from service.webhooks.models import WebhookEndpoint  # noqa: F401
