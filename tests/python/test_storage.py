"""Storages of Loom tensors through torch's Python storage layer: storage.cpu()/clone(),
copy.deepcopy, torch.save/torch.load and pickle, against CPU torch."""
import copy
import io
import pickle

import torch

import loom

DEV = loom.device


def test_storage_cpu_and_clone_see_pending_writes():
    x = torch.arange(6.0).to(DEV)
    x[2:4].mul_(10)  # pending
    s = x.storage()
    cpu = s.cpu()
    assert cpu.device.type == "cpu" and cpu.dtype == torch.float32
    assert cpu.tolist() == [0, 1, 20, 30, 4, 5]
    c = s.clone()
    assert c.device == DEV and c.tolist() == cpu.tolist()
    assert c.data_ptr() != s.data_ptr()


def test_deepcopy_keeps_views_sharing_and_breaks_aliasing_with_the_source():
    base_cpu = torch.arange(12.0)
    base = base_cpu.to(DEV)
    view = base.view(3, 4)[:, 1::2]
    got = copy.deepcopy([base, view])
    want = copy.deepcopy([base_cpu, base_cpu.view(3, 4)[:, 1::2]])
    for g, w in zip(got, want):
        assert g.device == DEV
        assert (g.shape, g.stride(), g.storage_offset()) == (w.shape, w.stride(), w.storage_offset())
        assert torch.equal(g.cpu(), w)
    got[0].zero_()  # the copies share one storage, and not the original's
    assert got[1].cpu().abs().sum() == 0
    assert base.cpu().tolist() == list(range(12))


def test_deepcopy_of_a_model_and_its_optimizer():
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2)).to(DEV)
    opt = torch.optim.Adam(model.parameters(), lr=0.1)
    model(torch.randn(5, 3).to(DEV)).sum().backward()
    opt.step()
    twin = copy.deepcopy(model)
    state = copy.deepcopy(opt.state_dict())
    for a, b in zip(model.parameters(), twin.parameters()):
        assert b.device == DEV and torch.equal(a.cpu(), b.cpu())
    assert state["state"][0]["exp_avg"].device == DEV


def test_save_and_load_round_trip():
    base = torch.randn(4, 5).to(DEV)
    t = base.t()
    buf = io.BytesIO()
    torch.save({"base": base, "t": t, "n": 3}, buf)
    buf.seek(0)
    back = torch.load(buf)
    assert back["n"] == 3 and back["base"].device == DEV and back["t"].device == DEV
    assert torch.equal(back["base"].cpu(), base.cpu())
    assert back["t"].stride() == t.stride()
    back["base"][0, 0] = 100.0  # the loaded tensors share their storage, as saved
    assert back["t"][0, 0].item() == 100.0
    buf.seek(0)
    on_cpu = torch.load(buf, map_location="cpu")
    assert on_cpu["base"].device.type == "cpu" and torch.equal(on_cpu["base"], base.cpu())


def test_pickle_round_trip():
    for t in [torch.randn(3, 2), torch.tensor([True, False]), torch.arange(5),
              torch.randn(2, 2, dtype=torch.complex64).conj(), torch.randn(3).to(torch.bfloat16)]:
        x = t.to(DEV)
        y = pickle.loads(pickle.dumps(x))
        assert y.device == DEV and y.dtype == t.dtype
        assert torch.equal(y.cpu(), t.resolve_conj())
    p = torch.nn.Parameter(torch.randn(2).to(DEV))
    q = pickle.loads(pickle.dumps(p))
    assert isinstance(q, torch.nn.Parameter) and q.requires_grad and q.device == DEV
