// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.20;

/// A minimal ERC-721 for the indexer's tests: only what emits Transfer (four topics).
contract Collectible {
    event Transfer(address indexed from, address indexed to, uint256 indexed tokenId);

    mapping(uint256 => address) public ownerOf;
    mapping(address => uint256) public balanceOf;

    function mint(address to, uint256 id) external {
        require(ownerOf[id] == address(0), "minted");
        ownerOf[id] = to;
        balanceOf[to] += 1;
        emit Transfer(address(0), to, id);
    }

    function transferFrom(address from, address to, uint256 id) external {
        require(ownerOf[id] == from && msg.sender == from, "not owner");
        ownerOf[id] = to;
        balanceOf[from] -= 1;
        balanceOf[to] += 1;
        emit Transfer(from, to, id);
    }

    function burn(uint256 id) external {
        address owner = ownerOf[id];
        require(owner == msg.sender, "not owner");
        delete ownerOf[id];
        balanceOf[owner] -= 1;
        emit Transfer(owner, address(0), id);
    }
}
