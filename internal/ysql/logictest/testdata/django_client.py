"""Django (Debian's python3-django, 3.2, on psycopg2) against YSQL: run by
TestClientCompat with host, port and database as arguments; prints "ok"
last when every check passed (an assertion or error exits non-zero with a
traceback). It makes an app's migrations, runs every migration of
contrib.auth and contenttypes and the app's (CREATE TABLE and CREATE INDEX
inside transaction blocks, varchar widenings of unique columns, the
introspection queries), uses the ORM (foreign keys, unique checks,
annotate() grouping by a key, F() updates in a transaction, cascades) and
migrates the app back to zero."""

import os
import sys
import tempfile

import django
from django.conf import settings

host, port, dbname = sys.argv[1], sys.argv[2], sys.argv[3]

# The app lives in a temporary directory: models here, migrations made.
root = tempfile.mkdtemp()
for pkg in ("shop", "shop_migrations"):
    os.makedirs(os.path.join(root, pkg))
    open(os.path.join(root, pkg, "__init__.py"), "w").close()
with open(os.path.join(root, "shop", "models.py"), "w") as f:
    f.write('''
from django.db import models

class Customer(models.Model):
    name = models.CharField(max_length=50, db_index=True)
    email = models.EmailField(unique=True)
    created = models.DateTimeField(auto_now_add=True)

class Order(models.Model):
    customer = models.ForeignKey(Customer, on_delete=models.CASCADE)
    total = models.IntegerField(default=0)
    note = models.TextField(blank=True)

    class Meta:
        indexes = [models.Index(fields=["customer", "total"])]

class Line(models.Model):
    order = models.ForeignKey(Order, on_delete=models.CASCADE)
    sku = models.CharField(max_length=20)
    qty = models.PositiveIntegerField()
    price = models.DecimalField(max_digits=8, decimal_places=2)

    class Meta:
        unique_together = [("order", "sku")]
''')
sys.path.insert(0, root)

settings.configure(
    USE_TZ=True,
    INSTALLED_APPS=["django.contrib.contenttypes", "django.contrib.auth", "shop"],
    DATABASES={"default": {"ENGINE": "django.db.backends.postgresql", "NAME": dbname,
                           "USER": "yugabyte", "HOST": host, "PORT": port}},
    DEFAULT_AUTO_FIELD="django.db.models.BigAutoField",
    MIGRATION_MODULES={"shop": "shop_migrations"},
)
django.setup()

from decimal import Decimal  # noqa: E402

from django.contrib.auth.models import User  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import IntegrityError, transaction  # noqa: E402
from django.db.models import Count, F, Sum  # noqa: E402

from shop.models import Customer, Line, Order  # noqa: E402

call_command("makemigrations", "shop", verbosity=0)
call_command("migrate", verbosity=0)

User.objects.create_user("ann", "ann@example.com", "pw")
assert User.objects.get(username="ann").check_password("pw")

c = Customer.objects.create(name="ann", email="ann@example.com")
with transaction.atomic():
    o = Order.objects.create(customer=c)
    for i in range(3):
        Line.objects.create(order=o, sku="s%d" % i, qty=i + 1, price="2.50")
        Order.objects.filter(pk=o.pk).update(total=F("total") + 1)
assert Order.objects.get(pk=o.pk).total == 3
skus = list(Line.objects.filter(order__customer__email="ann@example.com").order_by("sku").values_list("sku", flat=True))
assert skus == ["s0", "s1", "s2"], skus
assert Line.objects.aggregate(n=Count("id"), q=Sum("qty")) == {"n": 3, "q": 6}
assert list(Customer.objects.annotate(n=Count("order__line")).values_list("name", "n")) == [("ann", 3)]
assert Line.objects.filter(price=Decimal("2.50")).count() == 3

try:
    with transaction.atomic():
        Customer.objects.create(name="bob", email="ann@example.com")
    raise AssertionError("duplicate email accepted")
except IntegrityError:
    pass
try:
    with transaction.atomic():
        Line.objects.create(order=o, sku="s0", qty=1, price=1)
    raise AssertionError("duplicate (order, sku) accepted")
except IntegrityError:
    pass

c.delete()
assert Line.objects.count() == 0 and Order.objects.count() == 0

call_command("migrate", "shop", "zero", verbosity=0)
print("ok")
