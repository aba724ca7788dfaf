"""A run's scheduler serves only clients that hold the run's credentials; the credentials leave no trace."""

from __future__ import annotations

import stat

import pytest

from rmtsweep.errors import ClusterError
from rmtsweep.cluster.security import CREDENTIALS_PREFIX, exposure_warning, load_security, temporary_credentials


def test_credentials_are_private_and_removed_after_the_run(tmp_path):
    with temporary_credentials(tmp_path) as creds:
        assert creds.directory.parent == tmp_path and creds.directory.name.startswith(CREDENTIALS_PREFIX)
        assert stat.S_IMODE(creds.directory.stat().st_mode) == 0o700
        for f in (creds.ca_file, creds.cert, creds.key):
            assert stat.S_IMODE(f.stat().st_mode) == 0o600
        assert "BEGIN CERTIFICATE" in creds.cert.read_text() and "PRIVATE KEY" in creds.key.read_text()
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(KeyboardInterrupt):
        with temporary_credentials(tmp_path):
            raise KeyboardInterrupt                                      # Ctrl-C (SIGTERM raises likewise)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
def test_a_tls_scheduler_refuses_clients_without_the_runs_credentials(tmp_path):
    from distributed import Client, LocalCluster
    with temporary_credentials(tmp_path) as creds, temporary_credentials(tmp_path) as other:
        with LocalCluster(n_workers=1, threads_per_worker=1, processes=False, protocol="tls://", host="127.0.0.1",
                          security=creds.security(), dashboard_address="127.0.0.1:0") as cluster:
            address = cluster.scheduler_address
            assert address.startswith("tls://127.0.0.1:")
            with Client(address, security=creds.security(), timeout="10s") as client:
                assert client.submit(lambda: 6 * 7).result(timeout=30) == 42      # the run's own client
            with pytest.raises((OSError, TimeoutError)):                         # no credentials at all
                Client(address.replace("tls://", "tcp://"), timeout="3s")
            with pytest.raises((OSError, TimeoutError)):                         # another run's credentials
                Client(address, security=other.security(), timeout="3s")


def test_a_security_file_names_its_fields_and_files(tmp_path):
    with temporary_credentials(tmp_path) as creds:
        good = tmp_path / "sec.yaml"
        good.write_text(f"ca_file: {creds.ca_file}\ncert: {creds.cert}\n"
                        f"key: {creds.directory.name}/{creds.key.name}\n")            # relative to the file
        sec = load_security(good)
        assert sec.require_encryption and sec.tls_client_key == str(creds.key)
    missing = tmp_path / "missing.yaml"
    missing.write_text("ca_file: ca.pem\ncert: c.pem\n")
    with pytest.raises(ClusterError, match=r"missing\.yaml: field `ca_file`: .*ca\.pem does not exist"):
        load_security(missing)
    (tmp_path / "ca.pem").write_text("x")
    (tmp_path / "c.pem").write_text("x")
    with pytest.raises(ClusterError, match=r"field `key` is missing"):
        load_security(missing)
    with pytest.raises(ClusterError, match=r"nowhere\.yaml: cannot read it"):
        load_security(tmp_path / "nowhere.yaml")


@pytest.mark.parametrize("address, warned", [
    ("tcp://127.0.0.1:8786", False), ("localhost:8786", False), ("tcp://[::1]:8786", False),
    ("tls://10.0.0.5:8786", False), ("tcp://10.0.0.5:8786", True), ("192.0.2.7:8786", True),
])
def test_an_unencrypted_address_beyond_loopback_is_warned_about(address, warned):
    said = exposure_warning(address)
    assert (said is not None) == warned
    if warned:
        assert said.startswith(f"warning: --scheduler {address} is unencrypted") and "run code as you" in said
