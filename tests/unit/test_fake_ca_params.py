"""How the fake autoscaler writes a condition and reads a request's parameters, on plain objects: the
condition exactly as the real autoscaler's AddOrUpdateCondition leaves it, every parameter value it
accepts, and the message a request is failed with for one it cannot use."""

from __future__ import annotations

import dataclasses

import pytest

from fake_ca import conditions as C, lifecycle, params as P
from test_fake_ca_loop import T0, at, pr, ts


# ---------------------------------------------------------------------------- conditions

def test_a_condition_replaces_the_one_of_its_type_in_place_of_nothing_else_and_carries_the_write_time():
    before = [{"type": "Accepted", "status": "True", "reason": "Accepted", "message": "old",
               "lastTransitionTime": ts(0), "observedGeneration": 1},
              {"type": "Provisioned", "status": "False", "reason": "CapacityIsNotFound", "message": "m",
               "lastTransitionTime": ts(0)}]
    kept = [dict(c) for c in before]
    after = C.set_condition(before, "Accepted", "True", C.Reason.ACCEPTED, C.MSG_ACCEPTED, at(7), generation=3)
    assert after == [
        before[1],
        {"type": "Accepted", "status": "True", "reason": "Accepted",
         "message": "ProvisioningRequest is accepted by ClusterAutoscaler",
         "lastTransitionTime": "2026-12-01T10:00:07Z", "observedGeneration": 3}]
    assert before == kept                                       # the object that was read is not changed


def test_a_condition_written_by_server_side_apply_has_no_observed_generation():
    after = C.set_condition([], "Provisioned", "True", C.Reason.CAPACITY_PROVISIONED, C.MSG_CAPACITY_FOUND, T0)
    assert after == [{"type": "Provisioned", "status": "True", "reason": "CapacityIsProvisioned",
                      "message": "Capacity is found in the cluster", "lastTransitionTime": "2026-12-01T10:00:00Z"}]


def test_a_rewrite_with_the_same_status_still_moves_the_transition_time():
    first = C.set_condition([], "Provisioned", "False", C.Reason.NOT_FOUND, C.MSG_NOT_FOUND, at(0), 1)
    again = C.set_condition(first, "Provisioned", "False", C.Reason.NOT_FOUND, C.MSG_NOT_FOUND, at(65), 1)
    assert [c["lastTransitionTime"] for c in again] == ["2026-12-01T10:01:05Z"]


# ---------------------------------------------------------------------------- parameters

def params_of(**values) -> P.Params:
    return P.parse(pr(params=dict(values)))


def test_no_parameters_and_unreadable_parameters_are_the_defaults():
    assert P.parse(pr()) == P.Params(no_retry=False, valid_until=None, valid_until_note="", honor_valid_until=False,
                                     boot=None, stockout=None, revoke_after=None)
    listed = pr()
    listed["spec"]["parameters"] = ["noRetry=true"]             # not a map: nothing is read from it
    assert P.parse(listed) == P.Params()
    assert P.parse({"spec": {"parameters": None}}) == P.Params()


@pytest.mark.parametrize("value,expected", [("true", True), ("True", True), (" TRUE ", True), ("false", False),
                                            ("yes", False), ("1", False), ("", False)])
def test_flags_are_true_only_when_they_say_true(value, expected):
    assert params_of(noRetry=value).no_retry is expected
    assert params_of(fakeCAHonorValidUntil=value).honor_valid_until is expected


def test_each_parameter_lands_in_its_own_field():
    got = params_of(noRetry="true", ValidUntilSeconds="60", fakeCAHonorValidUntil="true", fakeCABootSeconds="12",
                    fakeCAStockout="30", fakeCARevokeAfterSeconds="4")
    assert got == P.Params(no_retry=True, valid_until=60.0, valid_until_note="", honor_valid_until=True,
                           boot=12.0, stockout=30.0, revoke_after=4.0)


@pytest.mark.parametrize("value,expected", [(None, None), ("false", None), (" FALSE ", None), ("true", P.FOREVER),
                                            ("TRUE", P.FOREVER), ("0", 0.0), ("30", 30.0), ("2.5", 2.5)])
def test_stockout_is_off_forever_or_a_number_of_seconds(value, expected):
    assert params_of(**({} if value is None else {"fakeCAStockout": value})).stockout == expected


@pytest.mark.parametrize("value,expected", [("never", P.FOREVER), (" Never ", P.FOREVER), ("NEVER", P.FOREVER),
                                            ("0", 0.0), ("15", 15.0)])
def test_boot_seconds_are_seconds_or_never(value, expected):
    assert params_of(fakeCABootSeconds=value).boot == expected


@pytest.mark.parametrize("key", ["fakeCABootSeconds", "fakeCAStockout", "fakeCARevokeAfterSeconds", "ValidUntilSeconds"])
def test_the_range_of_seconds_is_zero_to_ten_years_inclusive(key):
    assert P._seconds({key: "0"}, key) == 0.0
    assert P._seconds({key: "315360000"}, key) == P.MAX_SECONDS == 315360000
    for bad in ("-0.5", "315360000.5"):
        with pytest.raises(P.BadParameter) as e:
            P._seconds({key: bad}, key)
        assert str(e.value) == f"parameters.{key}='{bad}' is out of range (0..315360000)"


@pytest.mark.parametrize("values,message", [
    ({"fakeCABootSeconds": "soon"}, "parameters.fakeCABootSeconds='soon' is not a number of seconds or \"never\""),
    ({"fakeCAStockout": "soon"}, "parameters.fakeCAStockout='soon' is not a number of seconds"),
    ({"fakeCAStockout": "never"}, "parameters.fakeCAStockout='never' is not a number of seconds"),
    ({"fakeCARevokeAfterSeconds": "never"}, "parameters.fakeCARevokeAfterSeconds='never' is not a number of seconds"),
    ({"fakeCARevokeAfterSeconds": "-1"}, "parameters.fakeCARevokeAfterSeconds='-1' is out of range (0..315360000)")])
def test_an_unusable_fake_parameter_is_refused_with_its_name_and_value(values, message):
    with pytest.raises(P.BadParameter) as e:
        P.parse(pr(params=values))
    assert str(e.value) == message


def test_an_unparsable_valid_until_is_kept_as_a_note_not_refused():
    got = params_of(ValidUntilSeconds="soon")
    assert got == P.Params(valid_until_note="parameters.ValidUntilSeconds='soon' is not a number of seconds")
    assert params_of(ValidUntilSeconds="-3").valid_until_note == \
        "parameters.ValidUntilSeconds='-3' is out of range (0..315360000)"


def test_parameters_are_parsed_once_however_many_loops_read_them():
    r = pr(params={"fakeCAStockout": "30"})
    first, second = P.parse(r), P.parse(r)
    assert first == second == P.Params(stockout=30.0)
    info = P._parse.cache_info()
    assert (info.misses, info.hits) == (1, 1)


# ---------------------------------------------------------------------------- the settings

def test_a_setting_carries_its_default_help_the_real_value_and_how_its_flag_reads():
    """What `tau-demo fake-ca` makes its flags from (cli/fake_ca.py; test_declared_once.py checks each flag)."""
    fields = {f.name: f for f in dataclasses.fields(lifecycle.Options)}
    booking, boot, honour = fields["booking"], fields["boot"], fields["honor_valid_until"]
    assert (booking.default, dict(booking.metadata)) == (60.0, {
        "help": "how long Provisioned capacity stays booked (per request: parameters.fakeCABookingSeconds)",
        "real": "10m, hardcoded", "metavar": "DURATION", "never": "", "off": ""})
    assert boot.default is None and dict(boot.metadata)["real"] == "" and boot.metadata["never"] == "never"
    assert boot.metadata["metavar"] == "DURATION|never"
    assert honour.default is False and honour.metadata["off"] == "ignore-valid-until"
    assert fields["terminal_ttl"].default == 7 * 24 * 3600.0 and fields["terminal_ttl"].metadata["real"] == \
        "7 days, hardcoded"
    assert not fields["max_refresh_updates"].metadata                 # not a setting: no flag
