from __future__ import annotations

from django.apps import AppConfig


class AccountsConfig(AppConfig):
    name = "mdtboard.accounts"
    label = "accounts"
    verbose_name = "Accounts and teams"

    def ready(self) -> None:
        from allauth.account import signals as account_signals
        from allauth.mfa import signals as mfa_signals
        from django.contrib.auth.signals import user_logged_in
        from django.db.models.signals import post_migrate

        from mdtboard.accounts import receivers

        # Role groups follow the permissions every app defines, so sync after each migrate.
        post_migrate.connect(receivers.sync_roles_after_migrate, dispatch_uid="accounts-roles")
        # The absolute session lifetime counts from the sign-in (mdtboard.accounts.sessions).
        user_logged_in.connect(receivers.start_session_clock, dispatch_uid="accounts-session")
        account_signals.password_reset.connect(
            receivers.verify_email_after_password_reset, dispatch_uid="accounts-reset-verifies"
        )
        # Every change to the addresses a user signs in with goes to the audit log.
        for signal, receiver in (
            (account_signals.email_added, receivers.record_email_added),
            (account_signals.email_removed, receivers.record_email_removed),
            (account_signals.email_confirmed, receivers.record_email_confirmed),
            (account_signals.email_changed, receivers.record_email_changed),
        ):
            signal.connect(receiver, dispatch_uid=f"accounts-audit-{receiver.__name__}")
        # Two-factor: turned on or off, recovery codes regenerated or used, codes refused.
        for mfa_signal, mfa_receiver in (
            (mfa_signals.authenticator_added, receivers.record_mfa_added),
            (mfa_signals.authenticator_removed, receivers.record_mfa_removed),
            (mfa_signals.authenticator_reset, receivers.record_mfa_reset),
            (mfa_signals.authenticator_used, receivers.record_mfa_used),
            (mfa_signals.authentication_failed, receivers.record_mfa_failed),
        ):
            mfa_signal.connect(mfa_receiver, dispatch_uid=f"accounts-audit-{mfa_receiver.__name__}")
