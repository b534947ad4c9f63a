// Try-it page. Talks only to this origin; the key typed here is sent only with the request.
(() => {
  const $ = (id) => document.getElementById(id);
  const form = $("applet");
  const skill = $("skill");
  const body = $("body");
  const key = $("key");
  const status = $("status");
  const output = $("output");
  const challenge = $("challenge");

  skill.addEventListener("change", () => {
    body.value = skill.selectedOptions[0]?.dataset.example ?? "{}";
  });

  function decodeChallenge(header) {
    // PAYMENT-REQUIRED is base64 of UTF-8 JSON.
    const bytes = Uint8Array.from(atob(header), (c) => c.charCodeAt(0));
    return JSON.parse(new TextDecoder().decode(bytes));
  }

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    challenge.hidden = true;
    status.className = "muted";
    status.textContent = "Sending…";
    const headers = { "content-type": "application/json" };
    if (key.value.trim()) headers.authorization = `Bearer ${key.value.trim()}`;
    try {
      const res = await fetch(skill.value, { method: "POST", headers, body: body.value });
      const text = await res.text();
      let shown = text;
      try {
        shown = JSON.stringify(JSON.parse(text), null, 2);
      } catch {}
      output.textContent = shown;
      status.textContent = `${res.status} ${res.statusText}`;
      status.className = res.ok ? "status-ok" : res.status === 402 ? "status-pay" : "status-err";
      const header = res.headers.get("payment-required");
      if (res.status === 402 && header) {
        const offer = decodeChallenge(header).accepts?.[0];
        if (offer) {
          $("c-price").textContent = `$${(Number(offer.amount) / 1e6).toFixed(6).replace(/0+$/, "").replace(/\.$/, "")} (${offer.amount} atomic USDC)`;
          $("c-network").textContent = offer.network;
          $("c-payto").textContent = offer.payTo;
          $("c-asset").textContent = offer.asset;
          challenge.hidden = false;
        }
      }
    } catch (error) {
      status.className = "status-err";
      status.textContent = `Request failed: ${error.message}`;
    }
  });
})();
