"""The Celery application; tasks live in each app's ``tasks.py``."""

from __future__ import annotations

import os

from celery import Celery

# A server or worker started without DJANGO_SETTINGS_MODULE gets the production settings
# (which refuse to start without their secrets), never the development ones with DEBUG on.
# `make run` and manage.py choose the development settings explicitly.
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "mdtboard.settings.production")

app = Celery("mdtboard")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
