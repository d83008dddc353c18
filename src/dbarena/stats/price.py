"""What a label costs: an amount per hour or per month, in a currency. Pure.

Study E prices cloud instances per hour in USD; study A rents servers per month (in
roubles). A report compares prices only in one currency: dbarena converts none, since
an exchange rate would be a figure nobody measured. A month is 730 hours (365 x 24 /
12), as cloud providers bill.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

HOURS_PER_MONTH = 730
DEFAULT_CURRENCY = "USD"

# "0.58", "0.58/h", "420/month", "420 EUR/month", "EUR 420/mo", "420EUR/month"
_PRICE = re.compile(
    r"^\s*(?:(?P<cur1>[A-Za-z]{3})\s*)?(?P<amount>\d+(?:\.\d+)?|\.\d+)\s*(?P<cur2>[A-Za-z]{3})?\s*"
    r"(?:/\s*(?P<per>h|hr|hour|mo|month))?\s*$")


@dataclass(frozen=True)
class Price:
    per_hour: float
    currency: str = DEFAULT_CURRENCY
    per_month: float | None = None  # as given, when it was a monthly rent

    def shown(self) -> str:
        """The price as it was given: '0.58 USD/h', or '70 USD/month (0.0959 USD/h)' with
        the hourly figure reports compare (three significant digits: it is derived)."""
        if self.per_month is not None:
            return f"{self.per_month:.12g} {self.currency}/month ({self.per_hour:.3g} {self.currency}/h)"
        return f"{self.per_hour:.12g} {self.currency}/h"  # every digit given: 1.4464, not 1.446


def parse(text: str) -> Price:
    """A price as written on a command line; ValueError (with the reason) if it is not
    one. Its currency is "" when the text names none (see with_currency)."""
    m = _PRICE.match(text)
    if m is None:
        raise ValueError(f"{text!r} is not a price (e.g. 0.58/h, 420/month, 420 EUR/month)")
    if m["cur1"] and m["cur2"]:
        raise ValueError(f"{text!r} names two currencies")
    amount = float(m["amount"])
    if amount <= 0:
        raise ValueError(f"{text!r}: a price must be positive")
    code = (m["cur1"] or m["cur2"] or "").upper()
    if (m["per"] or "h") in ("mo", "month"):
        return Price(per_hour=amount / HOURS_PER_MONTH, currency=code, per_month=amount)
    return Price(per_hour=amount, currency=code)


def with_currency(price: Price, currency: str | None) -> Price:
    """A parsed price in its own currency, else in `currency` (e.g. the one stored with
    the label's runs), else in USD."""
    if price.currency:
        return price
    return Price(per_hour=price.per_hour, currency=currency or DEFAULT_CURRENCY, per_month=price.per_month)
